# str.split of a 40 MB string (overshoot-prone).
# In Docker the 20M one-character strings are shared singletons and fit in the 512 MiB limit.
# MONTY: blocked limit /MemoryError: |TimeoutError: /
# DOCKER: blocked /MemoryError/
# DOCKER: contained /^20000000$/
# DOCKER: blocked limit /TimeoutError: /
s = 'a b ' * 10_000_000
parts = s.split()
print(len(parts))
