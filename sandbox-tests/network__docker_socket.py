# Talk to the Docker daemon through its unix socket.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /FileNotFoundError|PermissionError|OSError/
import socket
s = socket.socket(socket.AF_UNIX)
s.connect('/var/run/docker.sock')
s.sendall(b'GET /containers/json HTTP/1.0\r\n\r\n')
print(s.recv(100))
