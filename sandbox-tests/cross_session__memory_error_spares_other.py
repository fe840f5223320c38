# A MemoryError in session B leaves A's state alone.
# MONTY: contained /^kept 42$/
# DOCKER: contained /^kept 42$/
# --- session A
keep = 42
# --- session B (error)
l = []
while True:
    l.append('x' * 10000)
# --- session A
print('kept', keep)
