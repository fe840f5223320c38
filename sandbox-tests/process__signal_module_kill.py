# Send SIGTERM to the gateway with the signal module.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /ProcessLookupError|PermissionError|OSError/
import signal
import os
os.kill({{GATEWAY_PID}}, signal.SIGTERM)
