# Session B rebinds print/len; A's builtins are untouched.
# MONTY: contained /^builtins 3$/
# DOCKER: contained /^builtins 3$/
# --- session A
x = 0
# --- session B
len = lambda o: -1
print = None
# --- session A
print('builtins', len([1, 2, 3]))
