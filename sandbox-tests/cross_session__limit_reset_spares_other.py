# A limit in session B resets B only; A keeps its state.
# MONTY: contained /^kept$/
# DOCKER: contained /^kept$/
# --- session A
keep = 'kept'
# --- session B (error)
while True:
    pass
# --- session A
print(keep)
