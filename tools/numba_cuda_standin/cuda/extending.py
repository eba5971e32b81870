"""``numba.cuda.extending``: Numba's extension API (``numba.extending``), which numba-cuda 0.30 copies, plus
``core_models`` (Numba's data models)."""

from numba.core.datamodel import models as core_models  # noqa: F401
from numba.extending import *  # noqa: F401,F403
from numba.extending import _Intrinsic  # noqa: F401
