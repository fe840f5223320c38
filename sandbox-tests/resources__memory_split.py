# str.split of a 40 MB string (overshoot-prone).
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
s = 'a b ' * 10_000_000
parts = s.split()
