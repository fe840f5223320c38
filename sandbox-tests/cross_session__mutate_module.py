# Session B mutates an imported module; A's module is intact.
# MONTY: contained /^\[1\]$/
# DOCKER: contained /^\[1\]$/
# --- session A
import json
# --- session B
import json
try:
    json.dumps = None
except Exception as e:
    print('refused', type(e).__name__)
# --- session A
print(json.dumps([1]))
