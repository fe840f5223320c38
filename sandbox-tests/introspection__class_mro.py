# Walk to object through __class__.__mro__.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
print(().__class__.__mro__[-1])
