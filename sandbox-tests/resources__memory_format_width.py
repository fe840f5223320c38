# A format spec asking for a 10**9-wide field.
# MONTY: blocked /MemoryError: |TimeoutError: /
# DOCKER: blocked /MemoryError|ValueError/
s = '%0*d' % (10**9, 1)
