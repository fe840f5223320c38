# Send a UDP datagram to loopback.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|PermissionError/
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b'x', ('127.0.0.1', {{DECOY_PORT}}))
