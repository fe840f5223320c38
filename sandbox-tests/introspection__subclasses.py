# Enumerate every loaded class with __subclasses__().
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
print(len(().__class__.__base__.__subclasses__()))
