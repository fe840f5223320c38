# Non-JSON floats as the result.
# MONTY: blocked /TypeError: the result cannot be returned: .*NaN/
# DOCKER: blocked /TypeError: the result cannot be returned: .*NaN/
print('made')
[float('nan'), float('inf'), -float('inf')]
