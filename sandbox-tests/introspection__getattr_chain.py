# Reach object internals through getattr() chains.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
print(getattr(getattr(getattr(1, '__class__'), '__base__'), '__subclasses__')())
