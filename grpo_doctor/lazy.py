"""numpy and pandas, imported when first used rather than when a module naming them is.

The rules declare themselves (id, title, parameters, documentation) at the top of the modules
holding their detectors, which compute with numpy and pandas. ``grpo-doctor rules`` and
``explain`` read only the declarations and should not pay for importing those (most of a
second). So the rule modules, and the modules they import, take ``np`` and ``pd`` from here: a
stand-in that imports the real module the first time one of its attributes is read, then
holds the real module's names, so later lookups cost what the module's own do (what
``lazy import`` does in Python 3.15, PEP 810). ``tests/test_cli.py`` checks that ``rules``,
``explain`` and ``--version`` import neither.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class _Deferred(ModuleType):
    def __getattr__(self, attr: str) -> Any:  # only for a name not (yet) in the namespace
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))
        return getattr(module, attr)


if TYPE_CHECKING:
    import numpy
    import pandas
else:
    numpy = _Deferred("numpy")
    pandas = _Deferred("pandas")
