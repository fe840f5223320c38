# A tool call that outlives the run's wall time.
# MONTY: blocked limit /TimeoutError: /
# DOCKER: blocked /TimeoutError/
odd_slow(ms=600000)
