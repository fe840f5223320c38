# TCP connect to the worker control port (the decoy when the mode has none).
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|ConnectionRefused|PermissionError|timed out/
import socket
s = socket.create_connection(('127.0.0.1', {{CONTROL_PORT}}), timeout=1)
print(s)
