"""The JSON contract: ``Diagnosis.to_dict()``, one object, stable and versioned."""

from __future__ import annotations

import json
import math
from typing import Any

from grpo_doctor.findings import Diagnosis


def _clean(obj: Any) -> Any:
    """JSON has no NaN/inf: write them as null so every parser reads the output."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return _clean(obj.item())
    return obj


def to_json_obj(diagnosis: Diagnosis) -> dict[str, Any]:
    return _clean(diagnosis.to_dict())


def render_json(diagnosis: Diagnosis) -> str:
    return json.dumps(to_json_obj(diagnosis), indent=2, ensure_ascii=False, allow_nan=False)
