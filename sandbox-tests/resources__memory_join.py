# ''.join of a thousand 1 MB strings (overshoot-prone).
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
x = ''.join(['a' * 1_000_000] * 1000)
