# os._exit() must not end the gateway.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: blocked /./
import os
os._exit(0)
