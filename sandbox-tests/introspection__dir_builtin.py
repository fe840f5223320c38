# Enumerate a module with dir().
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: contained /./
import os
print(dir(os))
