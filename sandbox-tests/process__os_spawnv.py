# Spawn a process with os.spawnv.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: contained /./
import os
print(os.spawnv(os.P_WAIT, '/bin/true', ['true']))
