"""Hydra/OmegaConf references inside a saved training config, resolved as the trainer
resolves them: verl saves its ``.hydra/config.yaml`` unresolved
(``response_length: ${data.max_response_length}``), so a reader that took the text would judge
the string, not the number the run used."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][\w.]*)\}")


def resolve_interpolations(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (copied) with Hydra/OmegaConf references to other keys resolved, as the
    trainer resolves them (``response_length: ${data.max_response_length}``: verl saves its
    ``.hydra/config.yaml`` unresolved). A value that is one reference takes the referenced
    value; a reference inside text is replaced by its text; resolvers (``${oc.env:X}``) and
    references to missing keys are left as written."""
    out = json.loads(json.dumps(config, default=str))  # a deep copy of plain data

    def target(dotted: str, seen: frozenset[str]) -> tuple[bool, Any]:
        node: Any = out
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return False, None
            node = node[part]
        if isinstance(node, str) and dotted not in seen and len(seen) < 32:
            return True, resolve(node, seen | {dotted})
        return True, node

    def resolve(value: str, seen: frozenset[str]) -> Any:
        whole = _INTERPOLATION.fullmatch(value.strip())
        if whole:
            found, got = target(whole.group(1), seen)
            return got if found else value

        def one(m: re.Match[str]) -> str:
            found, got = target(m.group(1), seen)
            return str(got) if found and not isinstance(got, (dict, list)) else m.group(0)

        return _INTERPOLATION.sub(one, value)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str) and "${" in node:
            return resolve(node, frozenset())
        return node

    resolved = walk(out)
    assert isinstance(resolved, dict)
    return resolved
