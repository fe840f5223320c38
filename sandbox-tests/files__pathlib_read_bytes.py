# Read the gateway binary with pathlib.
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: blocked /FileNotFoundError|PermissionError/
from pathlib import Path
print(len(Path('{{GATEWAY_BIN}}').read_bytes()))
