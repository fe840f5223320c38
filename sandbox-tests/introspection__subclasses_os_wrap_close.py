# The classic os._wrap_close gadget to reach os.system.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
for c in ''.__class__.__mro__[1].__subclasses__():
    if c.__name__ == '_wrap_close':
        print(c.__init__.__globals__['system']('id'))
