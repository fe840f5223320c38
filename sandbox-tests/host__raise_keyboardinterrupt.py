# Raise KeyboardInterrupt.
# MONTY: blocked /KeyboardInterrupt/
# DOCKER: blocked /KeyboardInterrupt/
raise KeyboardInterrupt()
