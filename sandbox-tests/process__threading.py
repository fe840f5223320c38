# Start a thread that outlives the run.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import threading
t = threading.Thread(target=lambda: None)
t.start()
print('thread')
