# HTTP POST to the gateway's own MCP endpoint with urllib.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /URLError|OSError|PermissionError|timed out/
import urllib.request
print(urllib.request.urlopen('{{GATEWAY_URL}}', data=b'{}', timeout=1).read())
