# Leave the filesystem server's root with ../ through the tool.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_read_text_file(path='{{ROOT}}/../outside/secret.txt'))
