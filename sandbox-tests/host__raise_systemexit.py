# Raise SystemExit directly.
# MONTY: blocked /SystemExit|NotImplementedError: Monty cannot run this: exceptions can only be called/
# DOCKER: blocked /SystemExit/
raise SystemExit(0)
