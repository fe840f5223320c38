# Replace the process image.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: blocked /FileNotFoundError|PermissionError|OSError/
import os
os.execv('/bin/sh', ['sh', '-c', 'id'])
