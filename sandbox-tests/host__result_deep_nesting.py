# A 100,000-deep nested list as the result.
# MONTY: blocked /RecursionError|ValueError|MemoryError|TypeError: the result cannot be returned/
# DOCKER: blocked /RecursionError|ValueError|TypeError: the result cannot be returned/
def build():
    x = []
    for i in range(100000):
        x = [x]
    return x
build()
