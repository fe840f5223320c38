# Change the gateway's environment.
# MONTY: blocked /PermissionError: environment access is denied/
# DOCKER: contained /^set$/
import os
os.environ['LD_PRELOAD'] = '/tmp/evil.so'
print('set')
