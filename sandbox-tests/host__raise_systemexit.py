# Raise SystemExit directly.
# MONTY: blocked /SystemExit/
# DOCKER: blocked /SystemExit/
raise SystemExit(0)
