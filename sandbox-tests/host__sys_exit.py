# sys.exit() must end the run, not the gateway.
# MONTY: blocked /SystemExit|AttributeError/
# DOCKER: blocked /SystemExit/
import sys
sys.exit(3)
