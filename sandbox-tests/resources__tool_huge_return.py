# A tool returns 8 MiB into the sandbox.
# MONTY: contained /^got 8388608$/
# MONTY: blocked limit /TimeoutError: /
# DOCKER: contained /^got 8388608$/
# DOCKER: blocked /TimeoutError/
r = odd_big_result(kb=8 * 1024)
print('got', len(r))
