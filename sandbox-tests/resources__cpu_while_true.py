# A pure-Python busy loop.
# MONTY: blocked limit /TimeoutError: /
# DOCKER: blocked /TimeoutError/
while True:
    pass
