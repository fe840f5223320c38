# List a directory with os.listdir.
# MONTY: blocked /PermissionError|AttributeError/
# DOCKER: contained /./
import os
print(os.listdir('/'))
