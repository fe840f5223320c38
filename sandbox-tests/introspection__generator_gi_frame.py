# Reach a generator's frame through gi_frame.
# MONTY: blocked /(NotImplementedError|SyntaxError|AttributeError|not support)/
# DOCKER: contained /./
g = (x for x in [1])
print(g.gi_frame.f_globals)
