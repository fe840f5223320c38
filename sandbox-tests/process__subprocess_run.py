# Run a shell command with subprocess.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /FileNotFoundError|PermissionError|OSError/
import subprocess
print(subprocess.run(['id'], capture_output=True).stdout)
