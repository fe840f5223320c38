# Read the gateway's command line (it names the config file).
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
import sys
print(sys.argv)
