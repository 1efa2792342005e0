"""TensorBoard scalar CSV downloads: ``Wall time,Step,Value``, one file per run and tag.

TensorBoard names them ``run-<run>-tag-<tag>.csv`` with each "/" of the tag written as "_". The
tag is recovered from the name: the "_" that were "/" are guessed by finding the spelling a
known metric key has (``train_completions_mean_length`` -> ``train/completions/mean_length``);
a name that matches nothing is kept as it is. A folder of such files is one run per ``<run>``
(one run when they share it); a single file is a one-metric run. The UI keeps at most 1,000
points per tag, which a note says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers._common import head_of, looks_like_text
from grpo_doctor.importers._csv import csv_header, read_csv_frame
from grpo_doctor.importers._long import concat_steps, long_frame, numeric_values
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.metrics import ALIASES, map_columns, normalize_key
from grpo_doctor.store import Run, build_run

_HEADER = ["wall time", "step", "value"]
_FILE = re.compile(r"run[-_](?P<run>.*?)-tag-(?P<tag>.+)", re.IGNORECASE)
_PREFIXES = ("train_", "eval_", "test_", "val_")
_MAX_UNDERSCORES = 12
_ALIAS_KEYS = {a.key for a in ALIASES}
_COMPONENT_MEAN = re.compile(r"^rewards?/[^/]+/mean$")
_NOTE = "a TensorBoard CSV download keeps at most 1,000 points per tag (it may be sampled)"


def _is_tb_header(head: bytes) -> bool:
    if not looks_like_text(head):
        return False
    return [c.strip().lower() for c in csv_header(head)] == _HEADER


def _tb_files(folder: Path) -> list[Path]:
    try:
        candidates = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".csv")
    except OSError as exc:
        raise InputError(f"{folder}: cannot list the folder ({exc.strerror or exc})") from exc
    return [p for p in candidates if p.is_file() and _is_tb_header(head_of(p))]


def _spellings(tag: str) -> list[str]:
    """Every way to read the "_" of a file-name tag as "_" or "/" (HF's train_ prefix as "/")."""
    parts = tag.split("_")
    fixed = 1 if tag.lower().startswith(_PREFIXES) else 0
    out = []
    for mask in range(2 ** (len(parts) - 1)):
        if fixed and not mask & 1:
            continue
        text = parts[0]
        for i, part in enumerate(parts[1:]):
            text += ("/" if mask >> i & 1 else "_") + part
        out.append(text)
    return out


def _score(spelling: str) -> int:
    norm = normalize_key(spelling)
    if norm in _ALIAS_KEYS:
        return 3
    if _COMPONENT_MEAN.match(norm):
        return 2
    return 1 if map_columns([spelling]).mapping else 0


def recover_tag(tag: str) -> str:
    """The tag a TensorBoard file name stands for (see the module docstring)."""
    if "/" in tag or "_" not in tag or tag.count("_") > _MAX_UNDERSCORES:
        return tag
    best, best_key = tag, (0, 0)
    for spelling in _spellings(tag):
        score = _score(spelling)
        key = (score, -spelling.count("/"))
        if score and key > best_key:
            best, best_key = spelling, key
    return best


def _run_and_tag(path: Path) -> tuple[str, str]:
    m = _FILE.fullmatch(path.stem)
    if m is None:
        return "", recover_tag(path.stem)
    return m.group("run"), recover_tag(m.group("tag"))


def _file_rows(path: Path, notes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    said: list[str] = []
    frame, explicit = read_csv_frame(path, said)
    notes.extend(f"{path.name}: {note}" for note in said)
    columns = {str(c).strip().lower(): c for c in frame.columns}
    if "step" not in columns or "value" not in columns:
        raise FormatError(f"{path}: a TensorBoard CSV needs Step and Value columns")
    steps = frame[columns["step"]].to_numpy()  # as read: exact (see _long.long_frame)
    values, nan = numeric_values(frame[columns["value"]], explicit.get(columns["value"]))
    return steps, values, nan


def _run(files: Sequence[Path], name: str, source: Path, options: LoadOptions) -> Run:
    steps, names, values, nans = [], [], [], []
    read_notes: list[str] = []
    for path in files:
        s, v, n = _file_rows(path, read_notes)
        steps.append(s)
        values.append(v)
        nans.append(n)
        names.extend([_run_and_tag(path)[1]] * len(s))
    if not names:
        raise FormatError(f"{source}: the TensorBoard CSV files have no rows")
    wide = long_frame(concat_steps(steps), names, np.concatenate(values), np.concatenate(nans),
                      str(source))
    return build_run(
        wide.frame, name=name, source=str(source), format="tensorboard-csv", steps=wide.steps,
        column_map=options.column_map, explicit_nan=wide.explicit,
        notes=[_NOTE, *read_notes, *wide.notes],
    )


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        return 90 if _tb_files(path) else 0
    return 90 if _is_tb_header(head) else 0


def _load(path: Path, options: LoadOptions) -> list[Run]:
    if not path.is_dir():
        run, _ = _run_and_tag(path)
        return [_run([path], run or path.stem, path, options)]
    files = _tb_files(path)
    if not files:
        raise FormatError(f"{path}: no TensorBoard CSV (Wall time,Step,Value) in the folder")
    groups: dict[str, list[Path]] = {}
    for f in files:
        groups.setdefault(_run_and_tag(f)[0], []).append(f)
    if len(groups) == 1:
        return [_run(files, path.name, path, options)]
    return [_run(g, run or path.name, path, options) for run, g in groups.items()]


IMPORTER = Importer(
    name="tensorboard-csv",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)
