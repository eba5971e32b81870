def broken(a:
    return a
