# Raise the recursion limit, then recurse deeply.
# MONTY: blocked /RecursionError|AttributeError/
# DOCKER: blocked /RecursionError/
import sys
sys.setrecursionlimit(10**6)
def f(n):
    return f(n + 1)
f(0)
