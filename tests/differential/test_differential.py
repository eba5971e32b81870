"""Random kernels against the reference: the differential test's CI profile.

Each test item is one generated module: K = 8 generated functions run by one kernel, compiled by
numba-metal and run on the CPU reference device, and the same source run by the Python reference
(tests/differential/reference.py). Items are parametrized by the batch seed, so a failure names
its seed (rerun: ``python tools/differential_run.py --seed N``); the failure is shrunk to a
minimal standalone reproducer script, printed and written to tests/differential/failures/.

A second test draws the generator's decisions from Hypothesis instead of a seed (derandomized,
``database=None``): Hypothesis starts from the simplest programs and shrinks a failure itself.

Profiles (``NUMBA_METAL_DIFF_PROFILE``): ``ci`` (default: >= 300 generated functions) and
``long`` (>= 10,000). The long run's documented command is
``python tools/differential_run.py --profile long`` (same seeds, a JSON summary for
docs/testing.md); this module's long profile runs the same batches under pytest.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from . import gen as G
from . import harness as H
from . import repro
from .choosers import HypothesisChooser, RandomChooser
from . import CASES_PER_BATCH, PROFILES

PROFILE = os.environ.get("NUMBA_METAL_DIFF_PROFILE", "ci")
FUNCTIONS = PROFILES[PROFILE]
SEED_BASE = {"ci": 1_000_000, "long": 2_000_000}[PROFILE]
BATCHES = -(-FUNCTIONS // CASES_PER_BATCH)
HYPOTHESIS_EXAMPLES = {"ci": 12, "long": 200}[PROFILE]
FAILURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "failures")

STATS = Counter()
FEATURES = Counter()


def _record(batch, out, seconds):
    STATS["seconds"] += seconds
    STATS["functions"] += batch.generated_functions
    STATS["kernels"] += 1
    STATS["compared"] += out.compared
    STATS["not_compared"] += out.skipped
    STATS[out.kind] += 1
    FEATURES.update(batch.features)


def _fail(batch, out, origin, name, shrink=True):
    best, best_out = (H.shrink(batch, out) if shrink and out.kind not in ("generator_error",
                                                                           "model_mismatch")
                      else (batch, out))
    text = repro.reproducer(best, best_out, origin=origin)
    os.makedirs(FAILURES_DIR, exist_ok=True)
    path = os.path.join(FAILURES_DIR, f"{name}_{out.kind}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    pytest.fail(f"{out.kind}: {out.message[:2000]}\n\nMinimal standalone reproducer ({path}):\n\n{text}",
                pytrace=False)


@pytest.mark.parametrize("seed", range(SEED_BASE, SEED_BASE + BATCHES))
def test_random_kernels_match_the_reference(seed):
    batch = G.generate_batch(RandomChooser(seed), CASES_PER_BATCH)
    t0 = time.perf_counter()
    out = H.run_batch(batch)
    _record(batch, out, time.perf_counter() - t0)
    if not out.ok:
        _fail(batch, out, f"Batch seed {seed} (rerun: python tools/differential_run.py --seed {seed}).",
              f"seed_{seed}")


_SEEN: set = set()


@settings(max_examples=HYPOTHESIS_EXAMPLES, derandomize=True, database=None, deadline=None,
          print_blob=True, suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
@given(st.data())
def test_hypothesis_kernels_match_the_reference(data):
    ch = HypothesisChooser(data)
    ncases = CASES_PER_BATCH if ch.int(0, 9) > 0 else ch.int(1, CASES_PER_BATCH - 1)
    batch = G.Generator(ch).generate(ncases)
    assume(batch.source not in _SEEN)  # Hypothesis revisits programs; test each once
    _SEEN.add(batch.source)
    t0 = time.perf_counter()
    out = H.run_batch(batch)
    _record(batch, out, time.perf_counter() - t0)
    if not out.ok:
        # Hypothesis shrinks the example itself; the reproducer is written for each failing try.
        _fail(batch, out, "Hypothesis example of tests/differential/test_differential.py "
              "(derandomized: rerun the test).", "hypothesis", shrink=False)


def test_profile_totals_and_coverage():
    """The runs above tested at least the profile's number of generated functions, compared
    nearly all outputs (few were undecidable in the reference) and exercised the grammar."""
    if STATS["kernels"] < BATCHES:
        pytest.skip("needs the full profile run above (deselected)")
    print(f"\ndifferential {PROFILE}: {STATS['functions']} generated functions in {STATS['kernels']} "
          f"kernels, {STATS['seconds']:.0f} s; {STATS['compared']} outputs compared, "
          f"{STATS['not_compared']} not compared (undecidable)")
    assert STATS["functions"] >= FUNCTIONS
    assert STATS["not_compared"] <= 0.05 * (STATS["compared"] + STATS["not_compared"])
    for feature in ("break_in_or", "while_true", "return_in_loop", "loop_else", "shared_barrier",
                    "helper_call", "grid3d", "block_nondivisible", "swap2", "pass_strided",
                    "atomic_add", "local_array", "inline_case"):
        assert FEATURES[feature] > 0, feature
