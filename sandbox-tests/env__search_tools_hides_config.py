# search_tools over everything never shows the config.
# MONTY: contained /^searched \d+$/
# DOCKER: contained /^searched \d+$/
hits = search_tools('', limit=1000)
hits = hits + search_tools('read file', limit=1000)
print('searched', len(hits))
