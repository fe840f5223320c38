# Send SIGKILL to the gateway process.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: blocked /ProcessLookupError|PermissionError|OSError/
import os
os.kill({{GATEWAY_PID}}, 9)
