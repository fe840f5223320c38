# compile() a code object.
# MONTY: blocked /NotImplementedError/
# DOCKER: contained /./
c = compile('1 + 1', '<x>', 'eval')
print(c.co_consts)
