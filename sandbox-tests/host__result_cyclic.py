# A self-containing list as the result.
# A value with no JSON form is not returned: the run succeeds and says why (result_unavailable).
# MONTY: contained /^$/
# DOCKER: contained /^$/
l = [1]
l.append(l)
l
