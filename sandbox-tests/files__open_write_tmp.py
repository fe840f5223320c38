# Write a file in /tmp with open().
# MONTY: blocked /PermissionError: .*(denied|no file system access)/
# DOCKER: contained /^wrote$/
f = open('/tmp/codemcp-corpus-write.txt', 'w')
f.write('pwned')
f.close()
print('wrote')
