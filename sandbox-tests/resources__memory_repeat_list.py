# A list multiplied to 10**9 items.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
l = [0] * 10**9
