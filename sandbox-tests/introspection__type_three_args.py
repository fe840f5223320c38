# Build a class dynamically with type(name, bases, dict).
# MONTY: blocked /TypeError|NotImplementedError/
# DOCKER: contained /./
A = type('A', (object,), {'x': 1})
print(A.__mro__)
