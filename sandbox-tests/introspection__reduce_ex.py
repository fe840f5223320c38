# Reach os.system via __reduce_ex__ (pickle gadget).
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
print((1).__reduce_ex__(2))
