# Write a file with pathlib.
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: blocked /OSError|PermissionError|Read-only/
from pathlib import Path
Path('{{OUTSIDE}}/pathlib-pwned.txt').write_text('pwned')
