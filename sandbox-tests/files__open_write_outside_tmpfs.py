# Write outside the scratch tmpfs (read-only root in a container).
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /OSError|PermissionError|Read-only/
f = open('/usr/local/codemcp-corpus.txt', 'w')
f.write('pwned')
f.close()
