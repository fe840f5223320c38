# Write outside the root through the tool.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_write_file(path='{{OUTSIDE}}/pwned.txt', content='pwned'))
