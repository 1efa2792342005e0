"""The local cache of fetched W&B runs: ``<cache>/<entity>/<project>/<run_id>.parquet`` plus
``<run_id>.json``, the layout the parquet importer reads; names checked before they become
paths, so nothing is written outside the cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from grpo_doctor.errors import FetchError
from grpo_doctor.importers.base import LoadOptions
from grpo_doctor.store import Run

_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


def safe_name(value: str, what: str) -> str:
    """``value`` if it may be a path component (letters, digits, ``.``, ``_``, ``-``)."""
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value):
        raise FetchError(
            f"invalid wandb {what} {value!r}: only letters, digits, '.', '_' and '-' are "
            f"allowed (at most 128, not starting with '.' or '-')"
        )
    return value


def parse_path(text: str) -> tuple[str, str, str | None]:
    """``entity/project[/run_id]`` (also ``wandb://...`` and the UI's ``.../runs/<id>``)."""
    raw = text
    if text.startswith("wandb://"):
        text = text[len("wandb://"):]
    elif text.startswith(("http://", "https://")):
        text = urlparse(text).path
    parts = text.rstrip("/").split("/")
    if len(parts) == 4 and parts[2] == "runs":
        parts = [parts[0], parts[1], parts[3]]
    if len(parts) not in (2, 3) or not all(parts):
        raise FetchError(f"{raw!r}: expected ENTITY/PROJECT or ENTITY/PROJECT/RUN_ID")
    entity = safe_name(parts[0], "entity")
    project = safe_name(parts[1], "project")
    run_id = safe_name(parts[2], "run id") if len(parts) == 3 else None
    return entity, project, run_id


def default_cache_dir() -> Path:
    """``$GRPO_DOCTOR_CACHE_DIR``, else the user cache folder (``platformdirs``)."""
    env = os.environ.get("GRPO_DOCTOR_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - platformdirs comes with wandb
        return Path.home() / ".cache" / "grpo-doctor"
    return Path(platformdirs.user_cache_dir("grpo-doctor", appauthor=False))


def cache_paths(cache_dir: Path, entity: str, project: str, run_id: str) -> tuple[Path, Path]:
    """(parquet, json) of a run in the cache; refuses anything that would leave it."""
    folder = cache_dir / safe_name(entity, "entity") / safe_name(project, "project")
    stem = safe_name(run_id, "run id")
    parquet, meta = folder / f"{stem}.parquet", folder / f"{stem}.json"
    root = cache_dir.resolve()
    if not parquet.resolve().is_relative_to(root):  # a symlinked folder pointing elsewhere
        raise FetchError(f"{parquet}: leaves the cache folder {cache_dir}")
    return parquet, meta


def read_cached_meta(parquet: Path) -> dict[str, Any] | None:
    """The JSON beside a cached run if the pair is complete and consistent, else None."""
    meta_path = parquet.with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("rows"), int):
        return None
    try:
        import pyarrow.parquet as pq

        n = pq.read_metadata(parquet).num_rows
    except Exception:  # missing or unreadable parquet: not cached
        return None
    return meta if n == meta["rows"] else None


def clean_stale_temps(folder: Path, stem: str, older_than: float = 3600.0) -> None:
    """Temp files an interrupted fetch left behind (``.<stem>.parquet.*.tmp``)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for tmp in folder.glob(f".{stem}.*.tmp"):
            with contextlib.suppress(OSError):
                if now - tmp.stat().st_mtime > older_than:
                    tmp.unlink()


def load_cached(parquet: Path, options: LoadOptions) -> list[Run]:
    """Read a cached run through the parquet importer (which reads the JSON beside it)."""
    from grpo_doctor.importers.parquet import IMPORTER

    return IMPORTER.load(parquet, options)
