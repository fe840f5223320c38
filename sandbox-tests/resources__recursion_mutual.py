# Mutual recursion through a lambda and a def.
# MONTY: blocked /RecursionError: /
# DOCKER: blocked /RecursionError/
g = lambda n: h(n + 1)
def h(n):
    return g(n)
h(0)
