# Read a secret environment variable of the gateway.
# MONTY: blocked /PermissionError: environment access is denied/
# DOCKER: contained /^None$/
import os
print(os.getenv('CODEMCP_CORPUS_SECRET'))
