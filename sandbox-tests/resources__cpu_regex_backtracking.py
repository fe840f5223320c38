# Catastrophic-backtracking regex.
# MONTY: contained /^(None|done)$/
# DOCKER: blocked /TimeoutError/
import re
print(re.match('(a+)+$', 'a' * 5000 + 'b'))
