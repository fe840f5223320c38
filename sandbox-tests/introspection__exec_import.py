# exec() of an import of subprocess.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
exec('import subprocess\nprint(subprocess.run)')
