# An exception whose message is 100 MB.
# MONTY: blocked /ValueError|MemoryError/
# DOCKER: blocked /ValueError|MemoryError/
raise ValueError('x' * 100_000_000)
