# Read a root-only host file.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /PermissionError/
print(open('/etc/shadow').read())
