# Session B redefines a function A uses.
# MONTY: contained /^a-impl$/
# DOCKER: contained /^a-impl$/
# --- session A
def helper():
    return 'a-impl'
# --- session B
def helper():
    return 'b-impl'
# --- session A
print(helper())
