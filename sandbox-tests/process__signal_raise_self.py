# Raise SIGKILL in the interpreter's own process.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import signal
signal.raise_signal(signal.SIGKILL)
