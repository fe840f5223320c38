# Grow a dict until memory runs out.
# MONTY: blocked limit /MemoryError: |TimeoutError: /
# DOCKER: blocked /MemoryError|Killed|exited/
d = {}
i = 0
while True:
    d[i] = str(i) * 20
    i += 1
