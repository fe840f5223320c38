# Read or swap a function's __code__.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
def f():
    return 1
def g():
    return 2
f.__code__ = g.__code__
print(f())
