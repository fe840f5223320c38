# Control case: the tool path works inside its root.
# MONTY: contained /^corpus-inside$/
# DOCKER: contained /^corpus-inside$/
print(fs_read_text_file(path='{{ROOT}}/in.txt')['content'].strip())
