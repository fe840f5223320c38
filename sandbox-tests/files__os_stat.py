# Stat a host file with os.stat.
# MONTY: blocked /PermissionError|AttributeError/
# DOCKER: contained /./
import os
print(os.stat('/etc/passwd'))
