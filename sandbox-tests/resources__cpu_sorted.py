# CPU/memory inside sorted() of 10**8 items.
# MONTY: blocked limit /MemoryError: |TimeoutError: /
# DOCKER: blocked /TimeoutError|MemoryError/
x = sorted(range(10**8), reverse=True)
