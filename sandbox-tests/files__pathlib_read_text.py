# Read a host file with pathlib.
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: contained /./
from pathlib import Path
print(Path('/etc/hostname').read_text())
