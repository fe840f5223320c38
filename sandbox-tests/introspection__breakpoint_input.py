# Open a debugger or read stdin (the MCP stream over stdio).
# In Docker pdb reads EOF from the worker's empty stdin and quits (BdbQuit; CPython 3.14 asks first, then SystemExit).
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: blocked /BdbQuit|EOFError|OSError|RuntimeError|SystemExit/
breakpoint()
print(input())
