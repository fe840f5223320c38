# Reach __builtins__ to find open/__import__.
# MONTY: blocked /NameError/
# DOCKER: contained /./
print(__builtins__)
