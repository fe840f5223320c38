# TCP connect to the worker control port (the decoy when the mode has none).
# In Docker 127.0.0.1 is the container's own loopback: the channel listens on the
# worker network's gateway address only (reachable by design; it needs a token).
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|ConnectionRefused|PermissionError|timed out/
import socket
s = socket.create_connection(('127.0.0.1', {{CONTROL_PORT}}), timeout=1)
print(s)
