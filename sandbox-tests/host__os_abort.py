# os.abort() must not end the gateway.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: blocked /./
import os
os.abort()
