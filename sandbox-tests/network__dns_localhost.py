# Resolve localhost.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /gaierror|OSError|PermissionError/
import socket
print(socket.gethostbyname('localhost'))
