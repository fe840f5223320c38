# Open the gateway's own memory.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /PermissionError|OSError/
f = open('/proc/self/mem', 'rb')
print(f.read(16))
