# A regex with a 10**9 repetition count.
# MONTY: blocked /(PatternError|error|MemoryError|OverflowError): /
# DOCKER: blocked /error|OverflowError|MemoryError/
import re
re.compile('a{1000000000}')
