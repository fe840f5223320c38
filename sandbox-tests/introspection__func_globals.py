# Reach module globals through a function's __globals__.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
def f():
    pass
print(f.__globals__)
