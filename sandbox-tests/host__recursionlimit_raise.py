# Raise the recursion limit, then recurse deeply.
# In CPython the raised limit lets it recurse for seconds: RecursionError at 10**6 frames, or the time limit first.
# MONTY: blocked /RecursionError|AttributeError/
# DOCKER: blocked /RecursionError/
# DOCKER: blocked limit /TimeoutError: /
import sys
sys.setrecursionlimit(10**6)
def f(n):
    return f(n + 1)
f(0)
