# Recursion inside a user __repr__ called by str().
# MONTY: blocked /RecursionError: /
# DOCKER: blocked /RecursionError/
class R:
    def __repr__(self):
        return repr(self)
str(R())
