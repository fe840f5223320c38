# Walk frames with sys._getframe.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
import sys
print(sys._getframe().f_back)
