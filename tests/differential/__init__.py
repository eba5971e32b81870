"""Differential testing of numba-metal: random kernels against a float32 Python reference.

- :mod:`.gen`: the random kernel generator (driven by a chooser: Hypothesis or a seeded RNG).
- :mod:`.semantics`: the reference's scalar semantics (Numba's typing and integer rules, float32
  arithmetic, error bounds for transcendental functions).
- :mod:`.reference`: runs generated source as plain Python on the host with those semantics.
- :mod:`.harness`: runs a generated batch on numba-metal and on the reference and compares them.
- :mod:`.repro`: the standalone reproducer script printed for a failure.
- ``python tools/differential_run.py``: the profiles (``ci``, ``long``) outside pytest.

docs/testing.md describes the design, the tolerance rule and the latest results.
"""

#: Generated functions per profile: ``ci`` in the suite (test_differential.py), ``long`` outside it.
PROFILES = {"ci": 300, "long": 10_000}
#: Functions per generated batch (one kernel each).
CASES_PER_BATCH = 8
