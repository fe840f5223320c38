# Read the gateway's command line (it names the config file).
# MONTY: contained /^\['main\.py'\]$/
# DOCKER: contained /./
import sys
print(sys.argv)
