# Probe for file existence (an oracle on the host).
# MONTY: blocked /PermissionError: .*denied/
# DOCKER: contained /^False$/
from pathlib import Path
print(Path('{{OUTSIDE}}/secret.txt').exists())
