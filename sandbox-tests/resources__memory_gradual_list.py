# Grow a list of strings until memory runs out.
# MONTY: blocked limit /MemoryError: /
# DOCKER: blocked /MemoryError|Killed|exited/
l = []
while True:
    l.append('x' * 10000)
