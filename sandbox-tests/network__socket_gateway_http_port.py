# TCP connect to the gateway's own HTTP port.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|ConnectionRefused|PermissionError|timed out/
import socket
s = socket.create_connection(('127.0.0.1', {{GATEWAY_PORT}}), timeout=1)
print(s)
