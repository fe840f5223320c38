# HTTP GET the test's loopback listener with urllib.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /URLError|OSError|PermissionError|timed out/
import urllib.request
print(urllib.request.urlopen('http://127.0.0.1:{{DECOY_PORT}}/', timeout=1).read())
