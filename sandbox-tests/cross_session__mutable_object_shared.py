# A's list is not reachable from B even under the same name.
# MONTY: blocked /NameError: /
# DOCKER: blocked /NameError/
# --- session A
box = [1, 2]
# --- session B
box.append(3)
