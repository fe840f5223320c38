# Replace the process image.
# In Docker the worker becomes sh, which finds no `id` in the image and exits; the run reports the lost worker.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: blocked /SystemExit: the CPython worker exited/
import os
os.execv('/bin/sh', ['sh', '-c', 'id'])
