# Reach frames through an exception's __traceback__.
# MONTY: blocked /AttributeError/
# DOCKER: contained /./
try:
    1 / 0
except ZeroDivisionError as e:
    print(e.__traceback__.tb_frame.f_back.f_globals)
