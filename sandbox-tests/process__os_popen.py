# Run a shell command with os.popen.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: contained /./
import os
print(os.popen('id').read())
