# Start a child process with multiprocessing.
# MONTY: blocked /PermissionError: import of .* is blocked/
# DOCKER: contained /./
import multiprocessing
p = multiprocessing.Process(target=print, args=('child',))
p.start()
p.join()
print(p.exitcode)
