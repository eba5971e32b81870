"""Robustness: invalid kernels and launch mistakes, and compiler fuzzing with random Python."""
