# Import a third-party HTTP client.
# MONTY: blocked /ModuleNotFoundError|PermissionError/
# DOCKER: blocked /ModuleNotFoundError/
import requests
print(requests.get('http://127.0.0.1:{{DECOY_PORT}}/', timeout=1))
