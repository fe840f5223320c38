# Import ssl.
# MONTY: blocked /PermissionError|ModuleNotFoundError/
# DOCKER: contained /./
import ssl
print(ssl.OPENSSL_VERSION)
