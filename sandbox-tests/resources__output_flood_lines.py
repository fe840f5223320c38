# Print millions of lines.
# MONTY: contained /output truncated at/
# DOCKER: contained /output truncated at/
for i in range(10**7):
    print('flood', i)
