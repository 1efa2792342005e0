"""The settings a notebook's code gives its trainer: ``GRPOConfig(learning_rate = 5e-6, ...)``.

A notebook's saved outputs hold the training table; its code cells hold the config the run
was made with (the Unsloth notebooks build a ``GRPOConfig`` in a cell, a LoRA adapter in
another). The code is parsed, never run: each keyword of the last ``GRPOConfig`` (or, with
none, ``TrainingArguments``/``RLOOConfig``) call whose value is a literal, or arithmetic over
names the notebook set to literals at the top level (``max_completion_length =
max_seq_length - max_prompt_length``), is a setting; a value computed from data is left out.
The rollout temperature and top_p of the vLLM ``SamplingParams`` the config is handed are
read too, and ``get_peft_model(r = ...)`` or ``LoraConfig(r = ...)`` marks an adapter's
training (``use_peft``, ``lora_r``).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable
from typing import Any

#: Trainer configs, most specific first: a GRPO notebook may build TrainingArguments for an
#: SFT warm-up too.
CONFIG_CALLS = ("GRPOConfig", "RLOOConfig", "TrainingArguments")
_ADAPTER_CALLS = ("get_peft_model", "LoraConfig")
#: What the vLLM sampling parameters handed to the config say of the rollouts.
_SAMPLING_KEYS = ("temperature", "top_p")
_MAX_CODE = 2_000_000
_NOTHING = object()  # a value the code computes from data: not a setting

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}


#: What a setting the code computes (from data, a call) is given as with ``computed=True``:
#: an unresolved interpolation to the recipe, so it is "not judged", never a default.
COMPUTED = "${computed in the code}"


def code_settings(cells: Iterable[str], *, computed: bool = False) -> dict[str, Any]:
    """The trainer settings ``cells`` (the notebook's code cells, in order) set literally;
    with ``computed``, those it computes too, as ``COMPUTED``."""
    names: dict[str, Any] = {}
    calls: dict[str, list[dict[str, Any]]] = {}
    size = 0
    for source in cells:
        size += len(source)
        if size > _MAX_CODE:
            break
        tree = _parse(source)
        if tree is not None:
            _read_cell(tree, names, calls, computed)
    config = next((calls[c][-1] for c in CONFIG_CALLS if calls.get(c)), None)
    if config is None:
        return {}
    settings = {k: v for k, v in config.items() if not isinstance(v, _Sampling)}
    sampling = next((v for v in config.values() if isinstance(v, _Sampling)), None)
    if sampling is not None:
        for key in _SAMPLING_KEYS:
            if key in sampling.keywords and key not in settings:
                settings[key] = sampling.keywords[key]
    adapters = [kw for c in _ADAPTER_CALLS for kw in calls.get(c, [])]
    if adapters:
        settings.setdefault("use_peft", True)
        rank = adapters[-1].get("r")
        if isinstance(rank, int) and rank > 0:
            settings.setdefault("lora_r", rank)
    return settings


class _Sampling:
    """A ``SamplingParams(...)`` the code built: its literal keywords."""

    def __init__(self, keywords: dict[str, Any]) -> None:
        self.keywords = keywords


def config_syntax_error(cells: Iterable[str]) -> str | None:
    """Where the first cell that writes a trainer config fails to parse ("cell 4, line 2:
    '(' was never closed"), or None: said when no config could be read from the code."""
    for index, source in enumerate(cells, 1):
        if not any(f"{name}(" in source for name in CONFIG_CALLS):
            continue
        lines = [("" if line.lstrip().startswith(("!", "%")) else line)
                 for line in source.splitlines()]
        try:
            ast.parse("\n".join(lines))
        except SyntaxError as exc:
            return f"cell {index}, line {exc.lineno}: {exc.msg}"
        except (ValueError, RecursionError, MemoryError):
            return f"cell {index}: not Python grpo-doctor can parse"
    return None


def _parse(source: str) -> ast.Module | None:
    """A cell's code with IPython's magics and shell lines dropped; None when it is not
    Python (or nests too deeply to parse)."""
    lines = [("" if line.lstrip().startswith(("!", "%")) else line)
             for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _read_cell(tree: ast.Module, names: dict[str, Any],
               calls: dict[str, list[dict[str, Any]]], computed: bool = False) -> None:
    """Top-level literal assignments into ``names``; every config, sampling or adapter call
    (anywhere in the cell, in order) into ``calls`` by its name."""
    for statement in tree.body:
        for node in _walk(statement):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in (*CONFIG_CALLS, *_ADAPTER_CALLS, "SamplingParams"):
                    calls.setdefault(name, []).append(
                        _keywords(node, names, computed and name in CONFIG_CALLS))
        target = _assigned_name(statement)
        if target is not None:
            value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) \
                else None
            if isinstance(value, ast.Call) and _call_name(value) == "SamplingParams":
                names[target] = _Sampling(calls["SamplingParams"][-1])
            else:
                names[target] = _value(value, names) if value is not None else _NOTHING


def _walk(node: ast.AST) -> list[ast.AST]:
    """``node``'s subtree in source order (ast.walk's order is breadth-first)."""
    try:
        return sorted((n for n in ast.walk(node) if hasattr(n, "lineno")),
                      key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    except RecursionError:
        return []


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _assigned_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        target = statement.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _keywords(node: ast.Call, names: dict[str, Any], computed: bool = False
              ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for keyword in node.keywords:
        if keyword.arg is None:
            continue  # **kwargs: what it holds is not written here
        if keyword.arg in seen:
            out.pop(keyword.arg, None)  # repeated: Python refuses the call, neither value ran
            continue
        seen.add(keyword.arg)
        value = _value(keyword.value, names)
        if value is not _NOTHING:
            out[keyword.arg] = value
        elif computed and not isinstance(names.get(getattr(keyword.value, "id", "")),
                                         _Sampling):
            out[keyword.arg] = COMPUTED
    return out


def _value(node: ast.expr, names: dict[str, Any]) -> Any:
    """``node``'s value when it is a literal, a name set to one, or arithmetic over them;
    else ``_NOTHING``."""
    try:
        value = _fold(node, names, 0)
    except (ArithmeticError, ValueError, TypeError, RecursionError):
        return _NOTHING
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)):
        return _NOTHING
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**18:
        return _NOTHING
    return value


def _fold(node: ast.expr, names: dict[str, Any], depth: int) -> Any:
    if depth > 20:
        return _NOTHING
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, bool | int | float | str) \
            or node.value is None else _NOTHING
    if isinstance(node, ast.Name):
        value = names.get(node.id, _NOTHING)
        return _NOTHING if isinstance(value, _Sampling) and depth > 0 else value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _fold(node.operand, names, depth + 1)
        if not _is_number(operand):
            return _NOTHING
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left = _fold(node.left, names, depth + 1)
        right = _fold(node.right, names, depth + 1)
        if not (_is_number(left) and _is_number(right)):
            return _NOTHING  # no string repetition, nothing computed from data
        if isinstance(node.op, ast.Pow):
            return left ** right if abs(right) <= 64 and abs(left) <= 1e6 else _NOTHING
        op = _BINARY.get(type(node.op))
        return op(left, right) if op is not None else _NOTHING
    if isinstance(node, ast.List | ast.Tuple):
        items = [_fold(e, names, depth + 1) for e in node.elts]
        return _NOTHING if any(i is _NOTHING for i in items) else items
    if isinstance(node, ast.Dict):
        keys = [_fold(k, names, depth + 1) if k is not None else _NOTHING for k in node.keys]
        values = [_fold(v, names, depth + 1) for v in node.values]
        if any(x is _NOTHING for x in (*keys, *values)):
            return _NOTHING
        return dict(zip(keys, values, strict=True))
    return _NOTHING


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
