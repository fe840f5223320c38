# An upstream error whose text is 4 MB: the response must stay bounded.
# MONTY: blocked /(ToolError|RuntimeError): /
# DOCKER: blocked /(ToolError|RuntimeError): /
odd_fail(message='x' * 4_000_000)
