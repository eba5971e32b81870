"""Libraries written with the host and kernel APIs, as a user could write them: reductions
(:mod:`.reduction`, ``metal.reduce``), ``target='metal'`` ufuncs and gufuncs (:mod:`.vectorize`) and
xoroshiro128+ random numbers (:mod:`.random`, public as ``numba_metal.random``, numba.cuda.random's
twin)."""
