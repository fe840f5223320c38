# Learn the gateway's working directory (Monty answers a virtual /).
# MONTY: contained /^\/$/
# DOCKER: contained /./
import os
print(os.getcwd())
