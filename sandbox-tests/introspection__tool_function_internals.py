# Inspect the injected tool function for host internals.
# In Docker tool functions are plain objects without __closure__.
# MONTY: blocked /AttributeError/
# DOCKER: blocked /AttributeError/
print(odd_add_numbers.__closure__, odd_add_numbers.__globals__)
