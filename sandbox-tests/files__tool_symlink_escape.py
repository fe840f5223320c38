# Follow a symlink inside the root that points outside it.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_read_text_file(path='{{ROOT}}/link'))
