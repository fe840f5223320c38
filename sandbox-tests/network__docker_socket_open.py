# Open the Docker socket as a file.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /FileNotFoundError|PermissionError|OSError/
print(open('/var/run/docker.sock', 'rb'))
