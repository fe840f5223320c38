# An exception whose message is 4 MB: the response must stay bounded.
# MONTY: blocked /ValueError|MemoryError/
# DOCKER: blocked /ValueError|MemoryError/
raise ValueError('x' * 4_000_000)
