# Read an absolute path outside the root through the tool.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_read_text_file(path='{{OUTSIDE}}/secret.txt'))
