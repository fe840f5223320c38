# Call libc system() through ctypes.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import ctypes
print(ctypes.CDLL(None).system(b'id'))
