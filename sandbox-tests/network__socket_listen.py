# Open a listening socket inside the sandbox.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|PermissionError/
import socket
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen()
print(s.getsockname())
