# Print one 100 MB line.
# MONTY: contained /output truncated at/
# MONTY: blocked /MemoryError/
# DOCKER: contained /output truncated at/
print('x' * 100_000_000)
