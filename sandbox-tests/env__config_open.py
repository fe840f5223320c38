# Read the upstream config file (commands, env, headers).
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: blocked /FileNotFoundError|PermissionError/
print(open('{{CONFIG}}').read())
