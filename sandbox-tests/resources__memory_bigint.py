# A 10**10-bit integer.
# In Docker the worker is killed at its memory limit (MemoryError), unless the time limit fires first.
# MONTY: blocked /MemoryError: /
# DOCKER: blocked limit /MemoryError: /
# DOCKER: blocked limit /TimeoutError: /
# Without a cgroup to make (not root, no delegated cgroup v2) the sandbox's address-space limit answers first.
# SANDBOX: blocked limit /MemoryError: /
# SANDBOX: blocked limit /TimeoutError: /
# SANDBOX: blocked python /MemoryError: /
x = 2 ** (10**10)
