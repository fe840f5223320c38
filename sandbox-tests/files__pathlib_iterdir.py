# List the root directory with pathlib.
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: contained /./
from pathlib import Path
print([p.name for p in Path('/').iterdir()])
