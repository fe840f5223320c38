# Reach the host's root file system through /proc/1/root.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /PermissionError|FileNotFoundError/
print(open('/proc/1/root/etc/shadow').read())
