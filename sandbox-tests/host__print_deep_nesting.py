# print() of a 100,000-deep nested list.
# MONTY: blocked /RecursionError/
# MONTY: contained /^\[\[\[.*\.\.\./
# DOCKER: blocked /RecursionError/
def build():
    x = []
    for i in range(100000):
        x = [x]
    return x
print(build())
