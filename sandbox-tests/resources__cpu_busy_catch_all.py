# A busy loop that tries to swallow the time limit.
# MONTY: blocked limit /TimeoutError: /
# DOCKER: blocked /TimeoutError/
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
