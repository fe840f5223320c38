# bytes(10**10).
# In Docker the zeroed pages are only reserved: untouched, they cost no memory, so the allocation succeeds where the kernel overcommits 10 GB and fails where it does not.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked /MemoryError/
# DOCKER: contained /^10000000000$/
b = bytes(10**10)
print(len(b))
