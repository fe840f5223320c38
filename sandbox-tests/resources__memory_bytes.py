# bytes(10**10).
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
b = bytes(10**10)
