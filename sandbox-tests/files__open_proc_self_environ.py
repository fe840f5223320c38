# Read the process environment through /proc/self/environ.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: contained /^environ-checked$/
data = open('/proc/self/environ', 'rb').read()
print('environ-checked' if b'CORPUS' not in data else data)
