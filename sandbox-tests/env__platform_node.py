# Learn the host name.
# MONTY: blocked /PermissionError|ModuleNotFoundError/
# DOCKER: contained /./
import platform
print(platform.node())
