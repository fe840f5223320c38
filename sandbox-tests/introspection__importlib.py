# Import through importlib.
# Monty has no importlib: it is an unsupported module (escalates when a fallback exists), never a way out.
# MONTY: blocked unsupported /ModuleNotFoundError: Monty does not support .*importlib/
# DOCKER: contained /./
import importlib
print(importlib.import_module('subprocess'))
