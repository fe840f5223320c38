# Return a 5 MB value.
# MONTY: blocked limit /CODEMCP_MAX_RESULT_BYTES/
# DOCKER: blocked /CODEMCP_MAX_RESULT_BYTES/
'x' * 5_000_000
