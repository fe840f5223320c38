# exec() of code that opens a file.
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: contained /root:x/
exec("print(open('/etc/passwd').read())")
