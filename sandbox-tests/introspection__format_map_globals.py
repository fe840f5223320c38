# Attribute access through str.format_map on a function.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
def f():
    pass
print('{f.__globals__}'.format_map({'f': f}))
