# time.sleep for an hour.
# MONTY: blocked limit /sleep limit/
# DOCKER: blocked /TimeoutError/
import time
time.sleep(3600)
