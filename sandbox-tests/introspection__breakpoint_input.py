# Open a debugger or read stdin (the MCP stream over stdio).
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: blocked /EOFError|OSError|RuntimeError/
breakpoint()
print(input())
