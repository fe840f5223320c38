# Send a UDP datagram to loopback.
# In Docker the datagram stays on the container's own loopback; the host's decoy sees nothing.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /^sent 1$/
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print('sent', s.sendto(b'x', ('127.0.0.1', {{DECOY_PORT}})))
