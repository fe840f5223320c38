# Read a module's __dict__, __loader__ and __spec__.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
import json
print(json.__loader__, json.__spec__, json.__dict__)
