# List the root's parent directory through the tool.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_list_directory(path='{{ROOT}}/..'))
