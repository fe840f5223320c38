# Spawn a shell on a pseudo-terminal.
# In Docker the shell waits on the pty until the run's time limit stops the worker.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked limit /TimeoutError: /
import pty
pty.spawn('/bin/sh')
