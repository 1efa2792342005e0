"""The JSON contract: ``Diagnosis.to_dict()``, one object, stable and versioned."""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from grpo_doctor.escape import json_dumps
from grpo_doctor.findings import Diagnosis


def _clean(obj: Any) -> Any:
    """What JSON can hold, at full precision: NaN/inf as null (JSON has neither), numpy
    scalars and arrays as numbers and lists, tuples and sets as lists, enums as their value,
    anything else as its text."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj.value if isinstance(obj, Enum) else obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_clean(v) for v in obj]
    if isinstance(obj, Enum):
        return _clean(obj.value)
    tolist = getattr(obj, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        try:
            return _clean(tolist())
        except (TypeError, ValueError):
            pass
    return str(obj)


def to_json_obj(diagnosis: Diagnosis) -> dict[str, Any]:
    return _clean(diagnosis.to_dict())


def render_json(diagnosis: Diagnosis) -> str:
    return json_dumps(to_json_obj(diagnosis), indent=2, allow_nan=False)
