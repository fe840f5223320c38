# A regex with a 10**9 repetition count.
# CPython compiles it at once (repeats up to 2**32 - 1 are allowed); a Pattern has no JSON form, so the run succeeds without its value.
# MONTY: blocked /(PatternError|error|MemoryError|OverflowError): /
# DOCKER: contained /^$/
import re
re.compile('a{1000000000}')
