# Probe the host file system through os.path.
# MONTY: blocked /PermissionError|AttributeError/
# DOCKER: contained /^False$/
import os
print(os.path.exists('{{OUTSIDE}}/secret.txt'))
