# Send an 8 MB argument to a tool.
# MONTY: contained /^echoed 800000[02]$/
# MONTY: blocked limit /TimeoutError: /
# DOCKER: contained /^echoed 800000[02]$/
# DOCKER: blocked /TimeoutError/
r = odd_echo_json(value='x' * 8_000_000)
print('echoed', len(r))
