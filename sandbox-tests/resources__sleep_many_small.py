# Many short sleeps that add up.
# MONTY: blocked limit /sleep limit/
# DOCKER: blocked /TimeoutError/
import time
for i in range(1000):
    time.sleep(0.3)
