# A 10**10-bit integer.
# In Docker the worker is killed at its memory limit (MemoryError), unless the time limit fires first.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked limit /MemoryError: /
# DOCKER: blocked limit /TimeoutError: /
x = 2 ** (10**10)
