"""The digests numba-metal computes (disk-cache keys and entries, the cffi declarations' stamp, print
formats' keys, dumped MSL's file names, records' struct names), from CPython's own hash modules: importing
``hashlib`` loads OpenSSL, which costs a process whose kernels come from the disk cache several
milliseconds of its start.
"""

from __future__ import annotations

import sys

try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256
    else:
        from _sha256 import sha256
    from _blake2 import blake2b
    from _sha1 import sha1
except ImportError:     # a Python without CPython's own modules: hashlib has them all
    from hashlib import blake2b, sha1, sha256

__all__ = ["sha256", "blake2b", "sha1"]
