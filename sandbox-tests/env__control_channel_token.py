# Read the worker control-channel token from the environment.
# MONTY: blocked /PermissionError: environment access is denied/
# DOCKER: contained /^no-token$/
import os
print(os.environ.get('CODEMCP_WORKER_TOKEN', 'no-token'))
