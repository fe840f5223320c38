# A tool returns 8 MiB into the sandbox. FastMCP sends it twice (text and structured
# content), over the default 16 MiB per-message cap: a clear error at once, naming the
# setting (it used to wait out the per-call timeout). With the cap raised it arrives whole.
# MONTY: contained /^got 8388608$/
# MONTY: blocked /over the 16.0 MiB limit \(CODEMCP_MAX_TOOL_RESULT_BYTES\)/
# DOCKER: contained /^got 8388608$/
# DOCKER: blocked /over the 16.0 MiB limit \(CODEMCP_MAX_TOOL_RESULT_BYTES\)/
r = odd_big_result(kb=8 * 1024)
print('got', len(r))
