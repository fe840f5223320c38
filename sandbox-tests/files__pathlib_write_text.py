# Write a file with pathlib.
# In Docker the host directory does not exist in the container (and / is read-only).
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: blocked /FileNotFoundError|OSError|PermissionError|Read-only/
from pathlib import Path
Path('{{OUTSIDE}}/pathlib-pwned.txt').write_text('pwned')
