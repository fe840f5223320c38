# Fingerprint the host kernel.
# MONTY: blocked /PermissionError|AttributeError/
# DOCKER: contained /./
import os
print(os.uname())
