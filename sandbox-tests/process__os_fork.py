# Fork the interpreter.
# MONTY: blocked /AttributeError|PermissionError/
# DOCKER: contained /./
import os
pid = os.fork()
print('forked', pid)
