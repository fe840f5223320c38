# Unencodable text (lone surrogates) in output and result.
# MONTY: contained /./
# DOCKER: contained /./
print('a\udcffb')
'\ud800'
