"""How a Diagnosis shows itself in a notebook, chosen at the package's top.

``Diagnosis._repr_markdown_`` (``findings``, low in the layers) renders through the function
registered here; the package's ``__init__``, which runs before any of its modules, registers
the Markdown reporter (high in the layers, imported only when a notebook displays a diagnosis).
So a notebook that imported only ``grpo_doctor`` shows the report, and no module imports a
layer above its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_markdown: Callable[[Any], str] | None = None


def register_markdown(render: Callable[[Any], str]) -> None:
    """Make ``render`` (a Diagnosis -> Markdown) what ``Diagnosis._repr_markdown_`` returns."""
    global _markdown
    _markdown = render


def markdown(diagnosis: Any) -> str | None:
    """The registered Markdown of ``diagnosis``; None when nothing is registered (a frontend
    then shows the repr)."""
    return None if _markdown is None else _markdown(diagnosis)
