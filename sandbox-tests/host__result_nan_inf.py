# Non-JSON floats as the result.
# MONTY: contained /./
# DOCKER: contained /./
print('made')
[float('nan'), float('inf'), -float('inf')]
