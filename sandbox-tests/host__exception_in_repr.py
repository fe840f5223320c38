# An object whose repr raises while the error is rendered.
# MONTY: blocked /./
# DOCKER: blocked /./
class Bad:
    def __repr__(self):
        raise RuntimeError('repr bomb')
raise ValueError(Bad())
