# One list of 10**12 items.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
l = list(range(10**12))
