import os

# Tests run on the CPU reference device unless told otherwise.
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")
