"""Optional dependencies: the packages only some commands need, each named by the extra
that installs it (`pip install transcli[ct2]`), imported when first used."""

from __future__ import annotations

import importlib
from types import ModuleType

from transcli.system.errors import UserError


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or say in one line how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"this needs the Python package '{module.split('.')[0]}': "
                        f"pip install transcli[{extra}]") from None
