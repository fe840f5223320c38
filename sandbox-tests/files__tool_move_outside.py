# Move a file from inside the root to outside it.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_move_file(source='{{ROOT}}/in.txt', destination='{{OUTSIDE}}/moved.txt'))
