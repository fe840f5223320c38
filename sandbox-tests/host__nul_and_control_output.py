# NUL, escape sequences and a fake JSON-RPC frame in output.
# MONTY: contained /jsonrpc/
# DOCKER: contained /jsonrpc/
print('\x00\x1b[2J\r\n{"jsonrpc":"2.0","id":99,"result":{}}')
