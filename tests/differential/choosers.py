"""Where the generator's decisions come from: Hypothesis (shrinkable) or a seeded RNG (fast, rerunnable).

Every decision is an integer in a range; the lowest value is always the simplest choice (no
feature, first alternative, fewest statements), so shrinking towards zero simplifies the program.
"""

from __future__ import annotations

import random


class Chooser:
    """The generator's source of decisions."""

    def int(self, lo: int, hi: int) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def bool(self, p: float = 0.5) -> bool:
        """True with probability ``p``; the simplest (shrunk) answer is False."""
        return self.int(0, 999) >= 1000 - int(p * 1000)

    def choice(self, seq):
        """One of ``seq``; shrinks towards ``seq[0]``."""
        return seq[self.int(0, len(seq) - 1)]

    def weighted(self, pairs):
        """One item of ``[(weight, item), ...]``; shrinks towards the first item."""
        total = sum(w for w, _ in pairs if w > 0)
        r = self.int(0, total - 1)
        for w, item in pairs:
            if w <= 0:
                continue
            if r < w:
                return item
            r -= w
        raise AssertionError("unreachable")


class RandomChooser(Chooser):
    """Decisions from ``random.Random(seed)``."""

    def __init__(self, seed: int):
        self.seed = seed
        self._rng = random.Random(seed)

    def int(self, lo, hi):
        return self._rng.randint(lo, hi)


class HypothesisChooser(Chooser):
    """Decisions drawn from Hypothesis's ``st.data()`` (shrinks towards the lowest values)."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self._data = data
        self._st = st
        self._cache: dict = {}

    def int(self, lo, hi):
        if lo == hi:
            return lo
        s = self._cache.get((lo, hi))
        if s is None:
            s = self._cache[(lo, hi)] = self._st.integers(lo, hi)
        return self._data.draw(s)
