# Print 100 MB in 200,000 lines.
# MONTY: contained /output truncated at/
# MONTY: blocked limit /TimeoutError: /
# DOCKER: contained /output truncated at/
for i in range(200_000):
    print('flood' * 100, i)
