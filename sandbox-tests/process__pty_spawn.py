# Spawn a shell on a pseudo-terminal.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: blocked /OSError|PermissionError|FileNotFoundError/
import pty
pty.spawn('/bin/sh')
