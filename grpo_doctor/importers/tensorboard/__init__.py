"""TensorBoard event files (``*tfevents*``): one run per folder that holds event files.

The TFRecord framing is read here, not by tensorboard's loaders: those check CRCs in pure
Python and keep a 10,000-point reservoir per tag (research note ``importers-research.md`` §1).
Each record is ``uint64 length | uint32 masked_crc32c(length) | data | uint32
masked_crc32c(data)``; both CRCs are checked with the ``crc32c`` C package. A record with a
bad CRC is skipped and noted, a truncated last record (a live run) ends the file quietly with a
note, and every scalar event is kept.

Scalars come in three encodings: ``simple_value`` (torch, tensorboardX, TF1), a tensor with
``float_val``/``double_val``/… (``tensorboard.plugins.scalar.summary_v2.scalar_pb``) and a tensor
with raw ``tensor_content`` bytes (TF2). Tensors count only when their tag's plugin is
"scalars", or when no plugin was ever named for the tag and the tensor holds a single number.

Speed: most events of one tag differ from its earlier ones only in wall time, step and
value(s), so records are decoded in bulk with numpy, with no Python step per record:

* Record boundaries: the pattern of record sizes (the tags of a step, in order) repeats. Its
  period is learnt once per file, from sizes followed one by one over a stretch long enough to
  hold it twice, and kept from window to window; the next records are guessed to repeat it and
  the guess is checked against the stored lengths in bulk. Where a guess fails (the step varint
  one byte longer at 128 and 16,384, an evaluation logged between steps) one period is followed
  one by one and guessing resumes; only a pattern that keeps failing soon is learnt again.
* Templates: a record parsed with protobuf becomes a template (its bytes, which bytes vary:
  wall time, step, each value; each value's tag, dtype and place), for one value per event or
  several (``_make_template``). Records are gathered as rows (one gather per record: numpy
  gathers unaligned words one at a time, slowly), keyed by length and tag, and compared with
  their template byte for byte outside the varying bytes, all templates at once; a record that
  equals its template is that event with other numbers, read straight from its row.
* Payload CRCs of those records follow from the template's (CRC-32C is affine): only the
  varying bytes' shares are added, read from the rows' columns and the values' raw bits.
* Anything else (first events, histograms, text, records of no template) is parsed record by
  record. ``_read_simple`` is the plain reader the tests hold all this against.

Memory: a run is read ``_WINDOW`` bytes at a time into compact per-window points, which are
written into the wide grid window by window; the peak stays near 2.5 times the float64 frame
however big the file (a file with damaged records is read whole by the same decoder, after its
framing has checked every CRC, so that its notes are those of the whole file).

Modules: ``framing`` (records and CRCs), ``decode`` (records into points, record by record
and in bulk); this one reads windows into a run's grid, finds runs and follows live files.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError
from grpo_doctor.files import read_bytes, read_error, size_of, walk
from grpo_doctor.importers._bytes import Buffer
from grpo_doctor.importers._common import (
    folder_run_name,
    generic_name,
    launches_run_name,
    truncation_note,
    walk_files,
)
from grpo_doctor.importers.base import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers.incremental import FileIdentity, SeveralRuns, read_from, snapshot
from grpo_doctor.importers.tensorboard.decode import (
    HPARAMS_TAG,
    _Damaged,
    _decode,
    _one_by_one,
    _Points,
    _Templates,
    read_event_file,
)
from grpo_doctor.importers.tensorboard.framing import (
    _U32,
    _U64,
    _corruption_notes,
    _frame,
    _header_is_valid,
    _resync,
    _SizeModel,
    masked_crc32c,
)
from grpo_doctor.live_store import Rows
from grpo_doctor.resumed import LAUNCHES, launch_key, launch_stamped, with_resumed
from grpo_doctor.store import Run, build_run, check_table_size
from grpo_doctor.text import plural

_SNIFF_MAX_DEPTH = 4
_SNIFF_MAX_ENTRIES = 5000

# --- a run's points, read a window at a time --------------------------------------------------

#: Bytes of an event file framed and decoded at a time: memory stays near the frame's size.
_WINDOW = 1 << 20


@dataclass
class _Chunk:
    """Points of one stretch of a run's event files, in file order, in compact dtypes:
    ``code`` is tag id * 2 + (1 if the value was a tensor)."""

    code: np.ndarray
    step: np.ndarray
    value: np.ndarray


@dataclass
class _FilePoints:
    chunks: list[_Chunk] = field(default_factory=list)
    plugins: list[tuple[str, int, str]] = field(default_factory=list)
    texts: list[tuple[str, int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _compact(pts: _Points, tag_ids: dict[str, int]) -> _Chunk | None:
    """``pts`` as one chunk in file order (``order``), with run-wide tag ids."""
    if not pts.tag_idx:
        return None
    ids = np.array([tag_ids.setdefault(t, len(tag_ids)) for t in pts.tags], dtype=np.int64)
    parts = len(pts.tag_idx)
    tag = ids[pts.tag_idx[0]] if parts == 1 else ids[np.concatenate(pts.tag_idx)]
    order = pts.order[0] if parts == 1 else np.concatenate(pts.order)
    # Bulk groups are runs in file order: the stable sort (timsort) merges them cheaply.
    by_order = np.argsort(order, kind="stable")
    tensor = pts.tensor[0] if parts == 1 else np.concatenate(pts.tensor)
    code = tag[by_order] * 2 + tensor[by_order]
    step = (pts.steps[0] if parts == 1 else np.concatenate(pts.steps))[by_order]
    value = (pts.values[0] if parts == 1 else np.concatenate(pts.values))[by_order]
    code = code.astype(np.int16 if len(tag_ids) < 2**14 else np.int32)
    if len(step) and step.min() >= -(2**31) and step.max() < 2**31:
        step = step.astype(np.int32)
    small = value.astype(np.float32)
    if np.array_equal(small, value, equal_nan=True):  # float32 values: kept exactly
        value = small
    return _Chunk(code, step, value)


def _shift_orders(pts: _Points, base: int) -> None:
    """Window-relative record numbers in ``pts`` to file-relative ones."""
    if not base:
        return
    shift = base << 8
    pts.order = [o + shift for o in pts.order]
    pts.plugins = [(t, o + shift, p) for t, o, p in pts.plugins]
    pts.texts = [(t, o + shift, x) for t, o, x in pts.texts]


def _read_points(path: Path, file_no: int, tag_ids: dict[str, int]) -> _FilePoints:
    """Every scalar point in one event file, as chunks.

    The file is read ``_WINDOW`` bytes at a time, each window ending at a record boundary,
    so that memory is bounded by the points, not the file. Notes and order are those of
    ``read_event_file``: should a window hold anything but clean records (corruption, an
    unreadable record), the whole file is read again at once by ``read_event_file``.
    """
    label = str(path)
    out = _FilePoints()
    try:
        with path.open("rb") as fh:
            size = size_of(fh)
            pos = 0  # file offset of the window
            rec_base = 0  # records before the window
            want = _WINDOW
            model = _SizeModel()  # learnt in the first window, checked in the others
            templates = _Templates()
            while True:
                n = min(want, size - pos)
                padded = bytearray(n + Buffer._PAD)
                fh.seek(pos)
                got = fh.readinto(memoryview(padded)[:n])
                b = Buffer(padded, got)
                at_end = pos + got >= size or got < n
                try:
                    fr = _frame(b, label, model, payloads=False)
                except FormatError:
                    if pos == 0:
                        raise
                    return _read_whole(path, file_no, tag_ids)
                count = len(fr.offsets)
                stop = int(fr.offsets[-1] + fr.lengths[-1] + 16) if count else 0
                if fr.notes:
                    if len(fr.notes) > 1 or not fr.notes[0].startswith("truncated final"):
                        return _read_whole(path, file_no, tag_ids)
                    if at_end:
                        fr.notes = [truncation_note(pos + stop)]
                    else:
                        fr.notes = []
                        if not count:  # one record longer than the window: widen it
                            (length,) = _U64.unpack_from(b.data, 0)
                            want = max(want, int(length) + 16)
                            continue
                try:
                    pts = _decode(b, fr, file_no, label, templates, verify=True)
                except _Damaged:
                    return _read_whole(path, file_no, tag_ids)
                if len(pts.notes) > len(fr.notes):
                    return _read_whole(path, file_no, tag_ids)
                _shift_orders(pts, rec_base)
                chunk = _compact(pts, tag_ids)
                if chunk is not None:
                    out.chunks.append(chunk)
                out.plugins.extend(pts.plugins)
                out.texts.extend(pts.texts)
                out.notes.extend(pts.notes)
                if at_end or not count:
                    return out
                pos += stop
                rec_base += count
                want = _WINDOW
    except OSError as exc:
        raise read_error(path, exc) from exc


def _read_whole(path: Path, file_no: int, tag_ids: dict[str, int]) -> _FilePoints:
    pts = read_event_file(path, file_no)
    chunk = _compact(pts, tag_ids)
    return _FilePoints([chunk] if chunk is not None else [], pts.plugins, pts.texts, pts.notes)


def _read_simple(path: Path, file_no: int, tag_ids: dict[str, int]) -> _FilePoints:
    """The reference reader the fast one is tested against: the whole file at once, records
    followed one at a time, both CRCs checked per record, every record parsed by protobuf.
    Slow, and meant to stay obviously right: it shares only ``_one_by_one`` and the run
    assembly with the fast path."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    data = read_bytes(path)
    label = str(path)
    n = len(data)
    if n == 0:
        raise FormatError(f"{label}: the file is empty")
    if n < 12 or not _header_is_valid(data, 0):
        raise FormatError(f"{label}: not a TensorBoard event file (no valid record at byte 0)")
    good: list[int] = []
    lengths: list[int] = []
    corrupt: list[int] = []
    truncated_at: int | None = None
    pos: int | None = 0
    while pos is not None and pos < n:
        if n - pos < 12:
            truncated_at = pos
            break
        if not _header_is_valid(data, pos):
            corrupt.append(pos)  # a length that cannot be trusted: the next valid header
            pos = next((q for q in range(pos + 1, n - 11) if _header_is_valid(data, q)), None)
            continue
        (length,) = _U64.unpack_from(data, pos)
        if pos + 16 + length > n:
            truncated_at = pos
            break
        (stored,) = _U32.unpack_from(data, pos + 12 + length)
        if masked_crc32c(data[pos + 12 : pos + 12 + length]) == stored:
            good.append(pos)
            lengths.append(length)
        else:
            corrupt.append(pos)
        pos += 16 + length
    notes = _corruption_notes(corrupt, truncated_at)
    b = Buffer(bytearray(data) + bytes(Buffer._PAD), n)
    offsets = np.asarray(good, dtype=np.int64)
    s = offsets + 12
    e = s + np.asarray(lengths, dtype=np.int64)
    order = (np.int64(file_no) << np.int64(48)) | (np.arange(len(s), dtype=np.int64) << 8)
    pts = _Points(notes=notes)
    _one_by_one(b, pts, np.arange(len(s)), s, e, offsets, order, Event, DecodeError, label)
    chunk = _compact(pts, tag_ids)
    return _FilePoints([chunk] if chunk is not None else [], pts.plugins, pts.texts, pts.notes)


_malloc_trim: Any = None


def _return_freed_memory() -> None:
    """Give the heap memory freed so far back to the OS (glibc only; elsewhere nothing).

    Reading a big file leaves megabytes of freed temporaries in the heap, which glibc keeps,
    while the grid and the frame are then mapped afresh: without this the resident set would
    hold both.
    """
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                pass
    if _malloc_trim:
        _malloc_trim(0)


def _kept(chunk: _Chunk, refused: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A chunk's (tag, step, value) without the tensors of refused tags."""
    code = chunk.code
    if refused is None:
        return code >> 1, chunk.step, chunk.value
    tag = code >> 1
    keep = ~(((code & 1) == 1) & refused[tag])
    return tag[keep], chunk.step[keep], chunk.value[keep]


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting (numpy 2.4's hashing unique takes ~0.5 s per 1M ints)."""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def _grid(chunks: list[_Chunk], refused: np.ndarray | None, n_tags: int, source: str = ""
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
    """Wide grid (steps x used tags) of the chunks, the last point logged winning each cell.

    Returns (steps, used tag ids in first-logged order, grid, logged-NaN mask, points
    replaced), or None when no point is kept. Chunks are in file order, so writing them in
    turn leaves the last point logged in each cell; each is dropped from ``chunks`` once
    written, so that the points and the grid are not held in full at once.
    """
    first_seen = np.full(n_tags, np.iinfo(np.int64).max, dtype=np.int64)
    step_sets = []
    total = 0
    for chunk in chunks:
        tag, step, _value = _kept(chunk, refused)
        if len(tag):
            np.minimum.at(first_seen, tag, np.arange(total, total + len(tag)))
            step_sets.append(_distinct(step))
            total += len(tag)
    if not total:
        return None
    steps = _distinct(np.concatenate(step_sets)).astype(np.int64)
    used = np.flatnonzero(first_seen < np.iinfo(np.int64).max)
    used = used[np.argsort(first_seen[used], kind="stable")]
    column = np.full(n_tags, -1, dtype=np.int64)
    column[used] = np.arange(len(used))
    check_table_size(source, len(steps), len(used), total)
    grid = np.full((len(steps), len(used)), np.nan, dtype=np.float64)
    written = np.zeros(grid.shape, dtype=bool)
    cells = grid.reshape(-1)
    marks = written.reshape(-1)
    n_written = 0
    for i, chunk in enumerate(chunks):
        chunks[i] = None  # type: ignore[call-overload]
        tag, step, value = _kept(chunk, refused)
        if not len(tag):
            continue
        cell = np.searchsorted(steps, step) * len(used) + column[tag]
        marks[cell] = True
        now = int(np.count_nonzero(marks))
        if now - n_written < len(cell):
            # A cell written twice (here or before): keep this chunk's last point per cell.
            _, last = np.unique(cell[::-1], return_index=True)
            last = len(cell) - 1 - last
            cell, value = cell[last], value[last]
        cells[cell] = value
        n_written = now
    explicit = written & np.isnan(grid)
    return steps, used, grid, explicit, total - n_written


# --- one run from its event files -------------------------------------------------------------


def _text_config(texts: list[tuple[str, int, str]]) -> dict[str, Any]:
    """Hugging Face writes TrainingArguments (and the model config) as JSON text summaries."""
    config: dict[str, Any] = {}
    hparams: dict[str, Any] = {}
    for tag, _order, text in sorted(texts, key=lambda t: t[1]):
        if tag == HPARAMS_TAG:
            hparams.update(json.loads(text))
            continue
        if not tag.endswith("text_summary"):
            continue
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(parsed, dict):
            continue
        name = tag[: -len("/text_summary")] if tag.endswith("/text_summary") else tag
        if name in ("args", "hparams", "config"):
            config.update(parsed)
        else:
            config[name] = parsed
    # add_hparams keeps a sanitised copy (lists as text): the full ``args`` text wins.
    return {**hparams, **config}


def _event_file_key(path: Path) -> tuple[int, str]:
    m = re.search(r"tfevents\.(\d+)", path.name)
    return (int(m.group(1)) if m else 0, path.name)


@dataclass
class _FileGroup:
    """The points of event files read as one run: a run and its resumes (a later file that
    goes on from a step after the first one's start)."""

    chunks: list[_Chunk] = field(default_factory=list)
    plugins: list[tuple[str, int, str]] = field(default_factory=list)
    texts: list[tuple[str, int, str]] = field(default_factory=list)
    files: int = 0  # files with points
    first: int | None = None  # its first step


def _first_step(chunks: list[_Chunk]) -> int | None:
    steps = [int(c.step.min()) for c in chunks if len(c.step)]
    return min(steps) if steps else None


def _load_run(name: str, files: list[Path], source: str, options: LoadOptions,
              read: Callable[[Path, int, dict[str, int]], _FilePoints] | None = None
              ) -> list[Run]:
    """The runs of one folder's event files, oldest first; none when they hold no scalar.
    A later file that goes on from a step after the run's first is the run resumed (merged,
    its values kept where steps overlap); one that starts over at or before the run's first
    step is another run written to the same folder (a run re-launched into one logging_dir:
    merged, it had read as one run with an invented learning-rate jump, trial 58), named
    ``NAME#2``. ``read`` reads one file's points (``_read_points``; tests pass
    ``_read_simple``)."""
    read = read or _read_points
    files = sorted(files, key=_event_file_key)
    notes: list[str] = []
    errors: list[FormatError] = []
    tag_ids: dict[str, int] = {}  # run-wide tag ids
    groups: list[_FileGroup] = [_FileGroup()]
    plugins: list[tuple[str, int, str]] = []
    texts: list[tuple[str, int, str]] = []
    files_read = 0
    got: _FilePoints | None  # None once its chunks are taken (below)
    for file_no, path in enumerate(files):
        try:
            got = read(path, file_no, tag_ids)
        except FormatError as exc:
            if len(files) == 1:
                raise
            errors.append(exc)
            notes.append(f"{path.name}: skipped ({str(exc).split(': ', 1)[-1]})")
            continue
        prefix = f"{path.name}: " if len(files) > 1 else ""
        notes.extend(prefix + note for note in got.notes)
        files_read += 1
        group = groups[-1]
        if got.chunks:
            first = _first_step(got.chunks)
            if group.first is not None and first is not None and first <= group.first:
                group = _FileGroup()  # started over: another run in the same folder
                groups.append(group)
            group.files += 1
            group.chunks.extend(got.chunks)
            if group.first is None:
                group.first = first
        group.plugins.extend(got.plugins)
        group.texts.extend(got.texts)
        plugins.extend(got.plugins)
        texts.extend(got.texts)
    got = None  # the chunks lists alone hold the points: _grid frees them as it goes
    _return_freed_memory()
    if not files_read and errors:
        raise errors[0]
    groups = [g for g in groups if g.chunks]
    if not groups:
        return []
    # A tensor counts only when its tag's plugin (from the first event naming one) is
    # "scalars", or when no plugin was ever named for the tag.
    plugin_of: dict[str, str] = {}
    for t, _o, plugin in sorted(plugins, key=lambda x: x[1]):
        plugin_of.setdefault(t, plugin)
    names = [""] * len(tag_ids)
    for t, i in tag_ids.items():
        names[i] = t
    refused = np.array([plugin_of.get(t, "") not in ("", "scalars") for t in names], dtype=bool)
    runs = []
    for k, group in enumerate(groups, 1):
        own = list(notes)
        if len(groups) > 1:
            own.append(f"{plural(len(groups), 'run')} written to this folder, each later one "
                       f"starting over from the first's step {groups[0].first} or before: read "
                       f"apart, this is run {k} of them")
        run = _group_run(f"{name}#{k}" if len(groups) > 1 else name, group, names, refused,
                         source, options, own)
        if run is not None:
            runs.append(run)
    return runs


def _group_run(name: str, group: _FileGroup, names: list[str], refused: np.ndarray,
               source: str, options: LoadOptions, notes: list[str]) -> Run | None:
    """One run from a group's points (``_load_run``)."""
    pivoted = _grid(group.chunks, refused if refused.any() else None, len(names), source)
    group.chunks = []
    if pivoted is None:
        return None
    frame_steps, used, grid, explicit, n_replaced = pivoted
    _return_freed_memory()

    import pandas as pd

    columns = [names[i] for i in used]
    frame = pd.DataFrame(grid, columns=columns, copy=False)
    explicit_nan = {columns[j]: explicit[:, j] for j in range(len(used)) if explicit[:, j].any()}
    restarts = max(group.files - 1, 0)
    if restarts:
        notes.append(
            f"{group.files} event files merged ({plural(restarts, 'restart')}); where steps "
            f"overlap the later file's value is kept ({plural(n_replaced, 'value')} replaced)"
        )
    return build_run(
        frame, name=name, source=source, format="tensorboard",
        steps=frame_steps if options.step_column is None else None,
        step_column=options.step_column, config=_text_config(group.texts),
        column_map=options.column_map, explicit_nan=explicit_nan, notes=notes,
        restarts=restarts,
    )


def _pivot(tag: np.ndarray, step: np.ndarray, value: np.ndarray, order: np.ndarray,
           n_tags: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Wide grid (steps x tags), the last point logged winning each cell; logged-NaN mask."""
    steps, row = np.unique(step, return_inverse=True)
    cell = row.astype(np.int64) * n_tags + tag
    n_cells = len(steps) * n_tags
    counts = np.bincount(cell, minlength=n_cells)
    n_replaced = int(len(cell) - np.count_nonzero(counts))
    if n_replaced:
        latest = np.full(n_cells, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(latest, cell, order)
        win = order == latest[cell]
        cell, value = cell[win], value[win]
    grid = np.full(n_cells, np.nan, dtype=np.float64)
    grid[cell] = value
    explicit = np.zeros(n_cells, dtype=bool)
    explicit[cell] = np.isnan(value)
    return steps, grid.reshape(len(steps), n_tags), explicit.reshape(len(steps), n_tags), n_replaced


# --- discovery, sniffing, loading -------------------------------------------------------------


def _is_event_file(name: str) -> bool:
    return "tfevents" in name


def _sniff(path: Path, head: bytes) -> int:
    try:
        if path.is_dir():
            return 90 if any(
                _is_event_file(p.name)
                for p in walk_files(path, _SNIFF_MAX_DEPTH, _SNIFF_MAX_ENTRIES)
            ) else 0
    except OSError:
        return 0
    if _header_is_valid(head):
        return 95 if _is_event_file(path.name) else 80
    # Named like an event file but not one: a low claim, so that a sniffer recognising the
    # content (a CSV named *tfevents*) wins, and otherwise the error says what is wrong.
    return 10 if _is_event_file(path.name) else 0


def _discover(path: Path) -> list[tuple[str, list[Path], str]]:
    """(run name, event files, source) for each folder that directly holds event files."""
    if path.is_file():
        return [(folder_run_name(path.parent) or path.name, [path], str(path))]
    by_folder: dict[Path, list[Path]] = {}
    # No recursion (a deep tree is no RecursionError); a linked folder is read, each folder once.
    for folder, _dirs, entries in walk(path, follow_links=True):
        found = [folder / e.name for e in entries if _is_event_file(e.name)]
        found = [f for f in found if f.is_file()]
        if found:
            by_folder[folder] = found
    named: list[tuple[str, str, list[Path], Path]] = []
    for folder, files in by_folder.items():
        if folder != path and folder.parent in by_folder and _hparams_only(files):
            continue  # the run's add_hparams session, read with the run (_with_hparams_beside)
        rel = folder.relative_to(path).as_posix()
        # A generic last folder names nothing (``w11/tensorboard/`` is the run "w11", and
        # ``a/tensorboard`` under a sweep is "a"), unless two runs would then share a name.
        head, _, last = rel.rpartition("/")
        short = (head or ".") if generic_name(last) else rel
        named.append((rel, short, files, folder))
    shorts = [short for _rel, short, _files, _folder in named]
    out = []
    for rel, short, files, folder in named:
        rel = short if shorts.count(short) == 1 else rel
        name = folder_run_name(path) if rel == "." else rel
        out.append((name, files, str(folder)))
    return out


def _resumed_runs(parent: Path, entries: list[tuple[str, list[Path], str]],
                  options: LoadOptions,
                  read: Callable[[Path, int, dict[str, int]], _FilePoints] | None
                  ) -> list[Run]:
    """The runs of sibling event folders, the folders of one run resumed joined: the Trainer
    writes each launch under ``runs/<date>_<host>``, so a run resumed from checkpoint-100 is a
    folder of steps 1-100 beside one of steps 101-200 (trial 58: refused as "holds 2 runs");
    :mod:`grpo_doctor.resumed` says which folders are launches of one run."""
    loaded: list[tuple[tuple[str, list[Path], str], list[Run]]] = []
    left: list[str] = []  # launches that logged nothing: a relaunch that died at start-up
    for entry in entries:
        try:
            found = [run for run in _load_run(*entry, options, read) if run.n_steps]
        except FormatError as exc:  # a file cut to nothing by a job killed before its flush
            left.append(f"{Path(entry[2]).name} ({str(exc).rsplit(': ', 1)[-1]})")
            continue
        if found:
            loaded.append((entry, found))
        else:
            left.append(f"{Path(entry[2]).name} (no scalar logged)")
    runs = [run for _, found in loaded for run in found]
    if not runs and left:
        raise FormatError(f"{parent}: no scalar events in any of its event folders")
    if any(len(found) != 1 for _, found in loaded):
        return runs
    out = with_resumed(runs, [Path(entry[2]).name for entry, _ in loaded],
                       LAUNCHES["tensorboard"], launches_run_name(parent), str(parent))
    if left:
        # (helper-77: one sibling that logged nothing had kept the launches apart, or failed
        # the whole read.)
        for run in out:
            run.notes.append(f"left out, logging nothing: {', '.join(left)}")
    return out


def _load(path: Path, options: LoadOptions,
          read: Callable[[Path, int, dict[str, int]], _FilePoints] | None = None) -> list[Run]:
    found = _discover(path)
    if not found:
        raise FormatError(f"{path}: no TensorBoard event files (*tfevents*) found")
    # --run naming one folder reads it alone; naming none (or a resumed run's joined name,
    # as diagnose printed it), the launches are joined and the name picked after.
    one = options.run is not None and any(name == options.run for name, _, _ in found)
    if one:
        found = [f for f in found if f[0] == options.run]
    runs: list[Run] = []
    by_parent: dict[Path, list[tuple[str, list[Path], str]]] = {}
    for entry in found:
        by_parent.setdefault(Path(entry[2]).parent, []).append(entry)
    for parent, siblings in by_parent.items():
        if len(siblings) > 1 and not one:
            runs.extend(_with_hparams_beside(run, Path(run.source))
                        for run in _resumed_runs(parent, siblings, options, read))
            continue
        for name, files, source in siblings:
            loaded = _load_run(name, files, source, options, read)
            runs.extend(_with_hparams_beside(run, Path(source)) for run in loaded)
            if not loaded and len(found) == 1:
                what = "file" if len(files) == 1 else "files"
                where = files[0] if len(files) == 1 else source
                raise FormatError(f"{where}: no scalar events in TensorBoard {what}")
    if not runs:
        raise FormatError(f"{path}: no scalar events in any TensorBoard file")
    return runs


#: An hparams sub-folder holds a few hundred bytes: a larger file is a run of its own, not read
#: here; and a folder of many sub-folders is a tree of runs, not one run's hparams.
_HPARAMS_MAX_BYTES = 1 << 20
_HPARAMS_MAX_FOLDERS = 16


def _hparams_of(path: Path) -> dict[str, Any] | None:
    """The settings of an add_hparams session in the event file ``path``; None when it is no
    small file holding one."""
    try:
        if path.stat().st_size > _HPARAMS_MAX_BYTES:
            return None
        texts = read_event_file(path).texts
    except (OSError, FormatError):
        return None
    found = [json.loads(text) for tag, _order, text in texts if tag == HPARAMS_TAG]
    return {k: v for got in found for k, v in got.items()} if found else None


def _hparams_only(files: list[Path]) -> bool:
    """Whether a folder's event files are an add_hparams session (with the metrics it was
    given), not a run of their own."""
    return all(_hparams_of(f) is not None for f in files)


def _with_hparams_beside(run: Run, folder: Path) -> Run:
    """``run`` with the settings ``SummaryWriter.add_hparams`` wrote for it, which torch and
    tensorboardX keep in a sub-folder of their own (``<logdir>/<time.time()>/``): settings the
    run's own event files (``args`` text) name win. ``run`` unchanged when there are none."""
    if folder.is_file():
        folder = folder.parent
    try:
        children = sorted(c for c in folder.iterdir() if c.is_dir())[:_HPARAMS_MAX_FOLDERS]
    except OSError:
        return run
    found: dict[str, Any] = {}
    for child in children:
        try:
            events = [f for f in sorted(child.iterdir()) if _is_event_file(f.name)
                      and f.is_file()]
        except OSError:
            continue
        for path in events:
            found.update(_hparams_of(path) or {})
    own = run.config or {}
    new = {k: v for k, v in found.items() if k not in own}
    if not new:
        return run
    from grpo_doctor.importers.sidecar import settings_text, supplied_settings

    merged = {**found, **own}
    named = settings_text(supplied_settings(merged, new)) or plural(len(new), "setting")
    note = f"settings read from the hparams TensorBoard keeps beside the log: {named}"
    return replace(run, config=merged, notes=[*run.notes, note])


# --- a growing run, read record by record from where each file left off (``watch``) -------------


@dataclass(frozen=True)
class _FileTail:
    offset: int = 0  # end of the last complete record consumed
    identity: FileIdentity = field(default_factory=FileIdentity)
    records: int = 0


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing TensorBoard run resumes: the run (found at the first read) and
    each of its event files' tail, and the plugin named for each tag so far."""

    name: str | None = None
    run_source: str = ""
    folder: Path | None = None  # None: the run is one event file
    files: Mapping[Path, _FileTail] = field(default_factory=dict)
    plugin_of: Mapping[str, str] = field(default_factory=dict)
    #: The sub-folders holding event files (an add_hparams session): one that appears is
    #: structural, so the run is rebuilt with its settings (``_with_hparams_beside``).
    sub_folders: frozenset[str] = frozenset()
    #: The run's launches (``runs/<date>_<host>`` of a resumed run) read as one: ``folder``
    #: holds them, and their event files are read in launch order (the later wins a step).
    launches: bool = False


def _sub_folders(folder: Path | None) -> frozenset[str]:
    """The names of ``folder``'s sub-folders (``_HPARAMS_MAX_FOLDERS`` at most) that hold an
    event file."""
    if folder is None:
        return frozenset()
    try:
        children = sorted(c for c in folder.iterdir() if c.is_dir())[:_HPARAMS_MAX_FOLDERS]
        return frozenset(c.name for c in children
                         if any(_is_event_file(f.name) for f in c.iterdir()))
    except OSError:
        return frozenset()


def _tail_files(path: Path, state: _Tail, options: LoadOptions) -> tuple[_Tail, list[Path] | None]:
    """The run's event files now (None: no run yet); the run is found at the first call."""
    if state.name is None:
        found = _discover(path)
        if options.run is not None:
            found = [f for f in found if f[0] == options.run]
        if not found:
            return state, None
        if len(found) > 1:
            joined = _launches_of_one_run(found, options)
            if joined is None:
                raise SeveralRuns(str(path), [f[0] for f in found])
            state = replace(state, name=joined[0], run_source=str(joined[1]), folder=joined[1],
                            launches=True)
        else:
            name, _files, run_source = found[0]
            folder = None if path.is_file() else Path(run_source)
            state = replace(state, name=name, run_source=run_source, folder=folder)
    if state.folder is None:
        return state, [path]
    if state.launches:
        return state, _launch_files(state.folder)
    try:
        files = [p for p in state.folder.iterdir() if _is_event_file(p.name) and p.is_file()]
    except OSError:
        return state, []
    return state, sorted(files, key=_event_file_key)


def _launches_of_one_run(found: list[tuple[str, list[Path], str]], options: LoadOptions
                         ) -> tuple[str, Path] | None:
    """The name and folder of the one run whose launches ``found`` are (sibling
    ``runs/<date>_<host>`` folders that read as one run resumed), else None: a watch of a
    resumed run had followed each launch as a run of its own (helper-79)."""
    parents = {Path(source).parent for _, _, source in found}
    if len(parents) != 1 or not all(launch_stamped(Path(source).name)
                                    for _, _, source in found):
        return None
    parent = parents.pop()
    try:
        runs = _resumed_runs(parent, found, options, None)
    except FormatError:
        return None
    return (runs[0].name, parent) if len(runs) == 1 else None


def _launch_files(folder: Path) -> list[Path]:
    """The event files of a run's launches under ``folder``, in launch order."""
    try:
        launches = sorted((c for c in folder.iterdir() if c.is_dir() and launch_stamped(c.name)),
                          key=lambda c: launch_key(c.name))
    except OSError:
        return []
    files: list[Path] = []
    for launch in launches:
        try:
            files += sorted((p for p in launch.iterdir() if _is_event_file(p.name)
                             and p.is_file()), key=_event_file_key)
        except OSError:
            continue
    return files


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    """The points appended to the run's event files since ``state``, one row per step. A new
    file, a corrupt record, a text summary, or a tag's first plugin is structural."""
    state, files = _tail_files(path, state or _Tail(), options)
    if files is None:
        return Delta(Rows(), state)
    subs = _sub_folders(state.folder)
    structural = subs != state.sub_folders and bool(subs - state.sub_folders)
    state = replace(state, sub_folders=subs)
    parts: list[Rows] = []
    tails = dict(state.files)
    plugin_of = dict(state.plugin_of)
    for file in files:
        tail = tails.get(file)
        if tail is None:
            tail = _FileTail()
            structural = True
        new, identity = tail.identity.changed(file)
        tail = replace(tail, identity=identity)
        if new:
            rows, odd, tail = _read_tail(file, tail, plugin_of)
            tail = replace(tail, identity=tail.identity.marked(file, tail.offset))
            structural = structural or odd
            if rows is not None:
                parts.append(rows)
        tails[file] = tail
    state = replace(state, files=tails, plugin_of=plugin_of)
    return Delta(Rows.concat(parts), state, structural)


def _read_tail(path: Path, tail: _FileTail, plugin_of: dict[str, str]
               ) -> tuple[Rows | None, bool, _FileTail]:
    """The whole records after ``tail`` in one event file, pivoted to rows (``plugin_of``
    gains the plugins named there); whether anything but clean scalar records was read."""
    data = read_from(path, tail.offset)
    if len(data) < 12:
        return None, False, tail
    buf = Buffer(bytearray(data) + bytes(Buffer._PAD), len(data))
    try:
        framing = _frame(buf, str(path))
    except FormatError:
        # No record starts where the last one ended: corruption. Skip to the next header.
        nxt = _resync(buf, 1)
        if nxt is None:
            return None, False, tail
        rows, _odd, tail = _read_tail(path, replace(tail, offset=tail.offset + nxt), plugin_of)
        return rows, True, tail
    if not len(framing.offsets):
        return None, False, tail
    odd = any(not n.startswith("truncated final record") for n in framing.notes)
    points = _decode(buf, framing, 0, str(path))
    odd = odd or bool(points.texts) or len(points.notes) > len(framing.notes)
    tail = replace(tail, offset=tail.offset + int(framing.offsets[-1] + framing.lengths[-1] + 16),
                   records=tail.records + len(framing.offsets))
    for name, _order, plugin in sorted(points.plugins, key=lambda t: t[1]):
        if name not in plugin_of:
            plugin_of[name] = plugin
            odd = True  # a plugin named for the first time may refuse earlier points
    if not points.tag_idx:
        return None, odd, tail
    tag = np.concatenate(points.tag_idx)
    step = np.concatenate(points.steps)
    value = np.concatenate(points.values)
    order = np.concatenate(points.order)
    tensor = np.concatenate(points.tensor)
    refused = np.array([plugin_of.get(t, "") not in ("", "scalars") for t in points.tags],
                       dtype=bool)
    keep = ~(tensor & refused[tag])
    if not keep.any():
        return None, odd, tail
    steps, grid, explicit, _ = _pivot(tag[keep], step[keep], value[keep], order[keep],
                                      len(points.tags))
    present = ~np.isnan(grid) | explicit
    cols = np.flatnonzero(present.any(axis=0))
    rows = Rows({points.tags[j]: grid[:, j] for j in cols},
                {points.tags[j]: explicit[:, j] for j in cols},
                steps.astype(np.float64), 0, len(steps))
    return rows, odd, tail


def _load_read(path: Path, state: _Tail | None, options: LoadOptions) -> Run | None:
    """The run ``_load`` reads from the records ``state`` has consumed of each file."""
    if state is None or state.name is None:
        return None
    files = [(p, t.offset) for p, t in state.files.items() if t.offset > 0]
    if not files:
        return None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
        copies = [snapshot(p, size, Path(tmp)) for p, size in files]
        try:
            loaded = _load_run(state.name, copies, state.run_source, options)
        except FormatError:
            return None
    # A run re-launched into the folder: the live one is the latest.
    return _with_hparams_beside(loaded[-1], Path(state.run_source)) if loaded else None


IMPORTER = Importer(
    name="tensorboard",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
    incremental=Incremental(read=_read_new, load=_load_read, policy="update"),
)
