"""How freed memory is kept or handed back to the OS (glibc's heap): what training and
prepare's aligner do with their many large arrays of like sizes. Imports no torch."""

from __future__ import annotations

import ctypes
from typing import Optional

# mallopt(3) parameters
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_HEAP_UP_TO = 1 << 30  # bytes: larger blocks are still mapped on their own


def keep_freed_memory() -> None:
    """Serve tensors of up to 1 GiB from the heap and keep freed blocks there (glibc only).

    By default glibc maps each large block afresh and unmaps it when freed, so every
    training step page-faults its big activations into memory again (README,
    "Benchmarks"). `release_freed_memory` still hands the kept blocks back now and then.
    """
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, _HEAP_UP_TO)
        _LIBC.mallopt(_M_TRIM_THRESHOLD, _HEAP_UP_TO)


def release_freed_memory() -> None:
    """Hand memory freed by earlier batches back to the OS (glibc only).

    Every batch has another shape, and glibc keeps the freed blocks: without this,
    a long CPU run's resident memory keeps growing (README, "Benchmarks").
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _load_libc() -> Optional[ctypes.CDLL]:
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc (macOS, musl): nothing to trim
        return None


_LIBC = _load_libc()
