# Resolve localhost.
# In Docker localhost is the container's own loopback (its /etc/hosts).
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /^127\.0\.0\.1$/
import socket
print(socket.gethostbyname('localhost'))
