# describe_tool shows schemas, never the upstream's launch command or env.
# MONTY: contained /^described$/
# DOCKER: contained /^described$/
d = describe_tool('fs_read_text_file')
s = str(d)
print('described' if 'node' not in s and 'command' not in s else s)
