# Session B overwrites a name; A still sees its own value.
# MONTY: contained /^mine$/
# DOCKER: contained /^mine$/
# --- session A
shared_name = 'mine'
# --- session B
shared_name = 'theirs'
# --- session A
print(shared_name)
