# Learn the gateway's working directory.
# MONTY: blocked /PermissionError|AttributeError/
# DOCKER: contained /./
import os
print(os.getcwd())
