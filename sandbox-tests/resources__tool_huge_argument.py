# Send a 20 MB argument to a tool.
# MONTY: contained /^echoed \d+$/
# MONTY: blocked /./
# DOCKER: contained /^echoed \d+$/
# DOCKER: blocked /./
r = odd_echo_json(value='x' * 20_000_000)
print('echoed', len(r))
