# The exit() builtin.
# MONTY: blocked /NameError|NotImplementedError|SystemExit/
# DOCKER: blocked /SystemExit/
exit(0)
