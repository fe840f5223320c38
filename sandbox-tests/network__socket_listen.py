# Open a listening socket inside the sandbox.
# In Docker it listens on the container's own loopback, which nothing outside reaches.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /^\('127\.0\.0\.1', \d+\)$/
import socket
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen()
print(s.getsockname())
