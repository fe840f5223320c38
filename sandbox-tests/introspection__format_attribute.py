# Attribute access inside a format string.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
print('{0.__class__.__mro__}'.format(1))
