# Import os through __import__.
# MONTY: blocked /NotImplementedError|NameError/
# DOCKER: contained /./
os = __import__('os')
print(os.system('id'))
