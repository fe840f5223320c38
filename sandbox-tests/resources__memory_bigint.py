# A 10**10-bit integer.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
x = 2 ** (10**10)
