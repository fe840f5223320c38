# Run a shell command with os.system.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: contained /./
import os
print(os.system('id > {{OUTSIDE}}/system-pwned.txt'))
