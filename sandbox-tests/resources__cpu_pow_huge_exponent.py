# pow() with a huge exponent and no modulus.
# MONTY: blocked /MemoryError: |TimeoutError: /
# DOCKER: blocked /MemoryError|TimeoutError/
x = pow(3, 10**12)
