# Learn the interpreter path and search path.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
import sys
print(sys.executable, sys.path)
