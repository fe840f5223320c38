# One 10 GB string.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
s = 'a' * 10**10
