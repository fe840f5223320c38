# Read a host file with open().
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: contained /root:x:0:0/
print(open('/etc/passwd').read())
