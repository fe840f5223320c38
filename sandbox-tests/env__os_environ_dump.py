# Dump the whole environment.
# MONTY: blocked /PermissionError: environment access is denied/
# DOCKER: contained /^env-checked$/
import os
env = dict(os.environ)
print('env-checked' if not [k for k in env if 'CORPUS' in k or 'TOKEN' in k] else env)
