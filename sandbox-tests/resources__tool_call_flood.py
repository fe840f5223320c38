# Call a tool in an endless loop.
# MONTY: blocked limit /CODEMCP_MAX_TOOL_CALLS/
# DOCKER: blocked /CODEMCP_MAX_TOOL_CALLS/
while True:
    odd_add_numbers(a=1, b=2)
