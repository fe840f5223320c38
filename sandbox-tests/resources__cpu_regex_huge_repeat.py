# A regex with a 10**9 repetition count.
# CPython compiles it at once (repeats up to 2**32 - 1 are allowed); a Pattern is no JSON result.
# MONTY: blocked /(PatternError|error|MemoryError|OverflowError): /
# DOCKER: blocked /TypeError: the result cannot be returned: .*Pattern|error|OverflowError|MemoryError/
import re
re.compile('a{1000000000}')
