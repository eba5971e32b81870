"""Stress tests: many buffers, threads, kernels and launches; faults followed by normal work."""
