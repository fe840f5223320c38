# A 100,000-deep nested list as the result.
# A value with no JSON form is not returned: the run succeeds and says why (result_unavailable).
# MONTY: contained /^$/
# DOCKER: contained /^$/
def build():
    x = []
    for i in range(100000):
        x = [x]
    return x
build()
