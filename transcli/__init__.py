"""transcli: train and run an English-to-Spanish Transformer from the command line."""

import os as _os

__version__ = "0.2.0"

# Before anything imports torch (see transcli.runtime): OpenMP threads that sleep when
# idle instead of spinning, so a busy machine does not slow training many times over.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
