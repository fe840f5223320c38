# Delete a file outside any root.
# MONTY: blocked /PermissionError|AttributeError/
# DOCKER: blocked /FileNotFoundError|PermissionError|OSError/
import os
os.remove('{{OUTSIDE}}/secret.txt')
