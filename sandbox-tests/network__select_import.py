# Import select/selectors for raw I/O multiplexing.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import select
print(select.select)
