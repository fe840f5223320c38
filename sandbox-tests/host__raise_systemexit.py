# Raise SystemExit directly.
# MONTY: blocked /SystemExit|RuntimeError: Internal error in monty: exceptions can only be called/
# DOCKER: blocked /SystemExit/
raise SystemExit(0)
