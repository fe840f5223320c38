# Read the gateway's HTTP bearer token from the environment.
# MONTY: blocked /PermissionError: environment access is denied/
# DOCKER: contained /^None$/
import os
print(os.getenv('CODEMCP_HTTP_TOKEN'))
