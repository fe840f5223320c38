# Read HOME through os.environ.get.
# MONTY: blocked /PermissionError: environment access is denied/
# DOCKER: contained /./
import os
print(os.environ.get('HOME'))
