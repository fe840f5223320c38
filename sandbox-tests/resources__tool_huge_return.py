# A tool returns 30 MB into the sandbox.
# MONTY: contained /^got 31457280$/
# MONTY: blocked /./
# DOCKER: contained /^got 31457280$/
# DOCKER: blocked /./
r = odd_big_result(kb=30 * 1024)
print('got', len(r))
