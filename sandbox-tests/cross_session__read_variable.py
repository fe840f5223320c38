# Session B reads a variable session A set.
# MONTY: blocked /NameError: /
# DOCKER: blocked /NameError/
# --- session A
corpus_secret_a = 'corpus-session-a-private'
# --- session B
print(corpus_secret_a)
