# Resolve a symlink that points out of the tool root.
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: contained /./
from pathlib import Path
print(Path('{{ROOT}}/link').resolve())
