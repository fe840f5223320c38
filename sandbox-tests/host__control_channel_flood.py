# Hold many idle connections to the worker control channel from one session
# (never finishing the WebSocket handshake), to use up the gateway's file
# descriptors (the corpus gateways get a soft limit of 1024) and stop other
# sessions' workers from connecting. Sessions B and C need fresh workers.
# MONTY: contained /^ok$/
# DOCKER: contained /^ok$/
# --- session A
try:
    import os, socket
    host, port = os.environ['CODEMCP_CONTROL_URL'].split('//')[1].strip('/').rsplit(':', 1)
    held = []
    try:
        for _ in range(1500):
            held.append(socket.create_connection((host, int(port)), timeout=1))
    except OSError as e:
        print(type(e).__name__, 'after', len(held))
    print('held', len(held))
except Exception as e:
    print('no sockets:', type(e).__name__)
# --- session B
print('b')
# --- session C
print('ok')
