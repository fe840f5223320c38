# Resolve a name that can only resolve locally (.invalid).
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /gaierror|OSError|PermissionError/
import socket
print(socket.getaddrinfo('codemcp-corpus.invalid', 80))
