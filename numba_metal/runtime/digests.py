"""The digests numba-metal computes (disk-cache keys and entries, the cffi declarations' stamp, print
formats' keys, dumped MSL's file names, records' struct names), from CPython's own hash modules: importing ``hashlib`` loads
OpenSSL, which costs a process whose kernels come from the disk cache several milliseconds of its start.
"""

from __future__ import annotations

try:
    from _sha2 import sha256            # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256      # CPython 3.10, 3.11
    except ImportError:                 # another Python: hashlib has both
        from hashlib import sha256
try:
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b
try:
    from _sha1 import sha1              # the records' struct names (compiler/abi.py)
except ImportError:
    from hashlib import sha1

__all__ = ["sha256", "blake2b", "sha1"]
