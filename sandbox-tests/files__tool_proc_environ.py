# Read /proc/self/environ through the filesystem tool.
# MONTY: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
# DOCKER: blocked /(ToolError|RuntimeError): .*(Access denied|outside allowed)/
print(fs_read_text_file(path='/proc/self/environ'))
