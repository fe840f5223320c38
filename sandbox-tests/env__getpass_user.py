# Learn the host user name.
# MONTY: blocked /PermissionError|ModuleNotFoundError/
# DOCKER: contained /./
import getpass
print(getpass.getuser())
