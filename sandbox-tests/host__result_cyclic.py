# A self-containing list as the result.
# MONTY: blocked /ValueError|RecursionError|TypeError/
# MONTY: contained /./
# DOCKER: blocked /ValueError|RecursionError|TypeError/
l = [1]
l.append(l)
l
