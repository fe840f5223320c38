# str.split of a 40 MB string (overshoot-prone).
# MONTY: blocked limit /MemoryError: |TimeoutError: /
# DOCKER: blocked /MemoryError/
s = 'a b ' * 10_000_000
parts = s.split()
