# Reach already-loaded modules through sys.modules.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
import sys
print(sys.modules['os'].system)
