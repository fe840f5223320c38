# Arm SIGALRM to kill the process later.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import signal
signal.alarm(1)
print('armed')
