# Unbounded recursion.
# MONTY: blocked /RecursionError: /
# DOCKER: blocked /RecursionError/
def f(n):
    return f(n + 1)
f(0)
