# Fetch open() from the builtins dict.
# MONTY: blocked /NameError|AttributeError|TypeError/
# DOCKER: contained /./
b = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__
print(b['open']('/etc/passwd').read())
