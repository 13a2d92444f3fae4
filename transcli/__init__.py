"""transcli: train and run an English-to-Spanish Transformer from the command line."""

from transcli import waitpolicy as _waitpolicy

__version__ = "0.2.0"

# Before anything imports torch: OpenMP threads spin between parallel regions on idle
# cores and sleep where other processes need them (transcli.waitpolicy).
_waitpolicy.choose()
