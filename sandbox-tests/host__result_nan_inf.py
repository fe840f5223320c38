# Non-JSON floats as the result.
# A value with no JSON form is not returned: the run succeeds and says why (result_unavailable).
# MONTY: contained /made/
# DOCKER: contained /made/
print('made')
[float('nan'), float('inf'), -float('inf')]
