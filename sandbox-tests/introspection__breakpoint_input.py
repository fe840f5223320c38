# Open a debugger or read stdin (the MCP stream over stdio).
# In Docker pdb reads EOF from the worker's empty stdin and quits (BdbQuit).
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: blocked /BdbQuit|EOFError|OSError|RuntimeError/
breakpoint()
print(input())
