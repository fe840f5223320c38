# Replay this worker's own token (still in /proc/self/environ, though not in
# os.environ) on a second control connection, to be taken for a new worker.
# Tokens are single-use: the gateway closes the connection.
# MONTY: blocked /PermissionError/
# DOCKER: contained /^refused$/
# In the sandbox nothing listens: the worker was handed its socket, and the URL names no host.
# SANDBOX: blocked /(gaierror|ConnectionRefusedError|OSError): /
pairs = [v.split(b'=', 1) for v in open('/proc/self/environ', 'rb').read().split(b'\0') if b'=' in v]
env = {k.decode(): v.decode() for k, v in pairs}
from websockets.sync.client import connect
with connect(env['CODEMCP_CONTROL_URL'], open_timeout=2, proxy=None) as ws:
    ws.send(env['CODEMCP_WORKER_TOKEN'])
    try:
        ws.recv(timeout=2)
        print('answered')
    except Exception as e:
        print('refused' if 'ConnectionClosed' in type(e).__name__ else type(e).__name__)
