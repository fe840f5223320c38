# Import through importlib.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import importlib
print(importlib.import_module('subprocess'))
