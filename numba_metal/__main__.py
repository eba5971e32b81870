"""``python -m numba_metal``: the ``numba-metal`` command (:mod:`numba_metal.tools.cli`)."""

import sys

from numba_metal.tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
