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

#: Longest text a reference inside text may resolve to: keys that each hold two references to
#: the one before (a "billion laughs") double at every level; past this the text is kept as
#: written, and each key is resolved once, so such a file costs linear time, not 2^depth.
MAX_RESOLVED_CHARS = 4096


def resolve_interpolations(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (copied) with Hydra/OmegaConf references to other keys resolved, as the
    trainer resolves them (``response_length: ${data.max_response_length}``: verl saves its
    ``.hydra/config.yaml`` unresolved). A value that is one reference takes the referenced
    value; a reference inside text is replaced by its text; resolvers (``${oc.env:X}``),
    references to missing keys, cycles and text that would grow past ``MAX_RESOLVED_CHARS``
    are left as written."""
    out = json.loads(json.dumps(config, default=str))  # a deep copy of plain data
    done: dict[str, Any] = {}  # each key's resolved value, once
    path: list[str] = []  # the keys being resolved: a reference back into it is a cycle

    def target(dotted: str) -> tuple[bool, Any]:
        node: Any = out
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return False, None
            node = node[part]
        if dotted in done:
            return True, done[dotted]
        if isinstance(node, str) and dotted not in path and len(path) < 32:
            path.append(dotted)
            try:
                done[dotted] = resolve(node)
            finally:
                path.pop()
            return True, done[dotted]
        return True, node

    def resolve(value: str) -> Any:
        whole = _INTERPOLATION.fullmatch(value.strip())
        if whole:
            found, got = target(whole.group(1))
            return got if found else value

        def one(m: re.Match[str]) -> str:
            found, got = target(m.group(1))
            return str(got) if found and not isinstance(got, (dict, list)) else m.group(0)

        text = _INTERPOLATION.sub(one, value)
        return text if len(text) <= MAX_RESOLVED_CHARS else value

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str) and "${" in node:
            return resolve(node)
        return node

    resolved = walk(out)
    assert isinstance(resolved, dict)
    return resolved
