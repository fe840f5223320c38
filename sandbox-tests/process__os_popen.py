# Run a shell command with os.popen.
# In Docker the image has a shell but no `id`; what it runs runs as uid 65534 inside the container.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: contained /id: not found|uid=65534/
import os
print(os.popen('id 2>&1').read())
