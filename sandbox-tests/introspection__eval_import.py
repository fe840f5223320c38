# eval() of code that imports os.
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: contained /./
print(eval("__import__('os').system('id')"))
