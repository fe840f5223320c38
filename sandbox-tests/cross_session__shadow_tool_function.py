# Session B shadows a tool function; A's calls still reach the tool.
# MONTY: contained /^3(\.0)?$/
# DOCKER: contained /^3(\.0)?$/
# --- session A
x = 0
# --- session B
def odd_add_numbers(a, b):
    return 'hijacked'
# --- session A
print(odd_add_numbers(a=1, b=2))
