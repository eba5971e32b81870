"""Paths of the advisor's sample projects and golden files."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "samples")
GOLDEN = os.path.join(HERE, "golden")
REPO = os.path.dirname(os.path.dirname(HERE))


def sample(*parts: str) -> str:
    return os.path.join(SAMPLES, *parts)
