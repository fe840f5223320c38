# Huge int to str conversion.
# MONTY: blocked /ValueError: .*digits/
# DOCKER: blocked /ValueError/
print(str(10**100000))
