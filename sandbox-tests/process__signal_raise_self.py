# Raise SIGKILL in the interpreter's own process.
# In Docker the worker is the container's init (pid 1), which the kernel shields from signals it has no handler for, SIGKILL from inside included.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /^survived$/
import signal
signal.raise_signal(signal.SIGKILL)
print('survived')
