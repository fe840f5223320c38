# HTTP GET with http.client.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|ConnectionRefused|PermissionError|timed out/
import http.client
c = http.client.HTTPConnection('127.0.0.1', {{DECOY_PORT}}, timeout=1)
c.request('GET', '/')
print(c.getresponse().status)
