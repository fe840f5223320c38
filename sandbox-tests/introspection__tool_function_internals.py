# Inspect the injected tool function for host internals.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
print(odd_add_numbers.__closure__, odd_add_numbers.__globals__)
