# Call globals()/vars()/locals() to find hidden names.
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: contained /./
print(globals())
