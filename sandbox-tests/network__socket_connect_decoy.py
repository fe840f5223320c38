# TCP connect to a loopback listener the test owns.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|ConnectionRefused|PermissionError|timed out/
import socket
s = socket.create_connection(('127.0.0.1', {{DECOY_PORT}}), timeout=1)
s.sendall(b'escaped')
