# CPU inside a builtin: sum(range(10**18)).
# MONTY: blocked limit /TimeoutError: /
# DOCKER: blocked /TimeoutError/
sum(range(10**18))
