# Read a root-only host file.
# In Docker the worker image has no /etc/shadow, and no host path is mounted.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /FileNotFoundError|PermissionError/
print(open('/etc/shadow').read())
