# Start a thread with _thread.
# MONTY: blocked /PermissionError|ModuleNotFoundError/
# DOCKER: contained /./
import _thread
print(_thread.start_new_thread(print, ('x',)))
