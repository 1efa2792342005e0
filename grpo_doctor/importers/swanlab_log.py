"""SwanLab runs: a ``swanlog/`` folder, one ``run-*/`` folder, or its ``run-<id>.swanlab`` file.

Read directly, never through the swanlab package. Since SwanLab 0.8 a local or offline run
(``mode="local"`` / ``"offline"``) keeps everything it logged in ``swanlog/run-<time>-<id>/
run-<id>.swanlab`` (SwanLab's ``DataStoreWriter``, checked against runs its 0.10 client
wrote): a 7-byte header ``:SWL`` + uint16 0xE1D6 + uint8 version (2), then the LevelDB log
framing W&B also uses (32 KiB blocks of ``uint32 crc | uint16 length | uint8 type | data``
chunks, ``crc = zlib.crc32(data, crc32(type))``), read with the W&B importer's
``iter_log_records``. Each record is a ``swanlab.record.v1.Record`` protobuf; the few fields
read here are declared below from SwanLab's ``.proto`` files (field numbers, not the package):

* ``start`` (10): project (1), name (4), id (10): the run's project, name and id;
* ``scalar`` (13): key (1), step (2), value (5) -> number (1, a double): one logged value;
* ``finish`` (11): state (1): running, finished, crashed, aborted.

Keys starting ``__swanlab__.`` are SwanLab's own system metrics (CPU, memory) on their own
step counter, and are left out. The config is ``files/config.yaml`` beside the log, one
``{value, desc, sort}`` entry per key. SwanLab itself refuses a second value for a key at a
step it already logged, so each (step, key) holds one value.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.files import read_bytes
from grpo_doctor.importers._common import has_magic, read_yaml
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.importers.tracker_store import TrackedRun, build_runs, read_each
from grpo_doctor.importers.wandb_offline.log import iter_log_records
from grpo_doctor.store import Run, step_array
from grpo_doctor.text import agree, plural

FORMAT = "swanlab"
MAGIC = b":SWL"
_HEADER = struct.Struct("<4sHB")
_IDENT = 0xE1D6
_VERSION = 2
_SYSTEM_PREFIX = "__swanlab__."
_STATES = {0: "running", 1: "finished", 2: "crashed", 3: "aborted"}
_MAX_RUNS = 5000


@functools.cache
def _record_class() -> Any:
    """``swanlab.record.v1.Record`` with only the fields read here (others are skipped as
    unknown fields by the parser)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fd = descriptor_pb2.FileDescriptorProto(name="grpo_doctor_swanlab_record.proto",
                                            package="grpo_doctor.swanlab", syntax="proto3")
    f = descriptor_pb2.FieldDescriptorProto
    kinds = {"string": f.TYPE_STRING, "int64": f.TYPE_INT64, "double": f.TYPE_DOUBLE,
             "enum": f.TYPE_INT32}

    def message(name: str, fields: list[tuple[str, int, str]]) -> None:
        msg = fd.message_type.add(name=name)
        for field_name, number, kind in fields:
            entry = msg.field.add(name=field_name, number=number, label=f.LABEL_OPTIONAL)
            if kind in kinds:
                entry.type = kinds[kind]
            else:
                entry.type = f.TYPE_MESSAGE
                entry.type_name = f".grpo_doctor.swanlab.{kind}"

    message("Start", [("project", 1, "string"), ("name", 4, "string"), ("id", 10, "string")])
    message("Finish", [("state", 1, "enum"), ("error", 2, "string")])
    message("Value", [("number", 1, "double")])
    message("Scalar", [("key", 1, "string"), ("step", 2, "int64"), ("value", 5, "Value")])
    message("Record", [("start", 10, "Start"), ("finish", 11, "Finish"),
                       ("scalar", 13, "Scalar")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("grpo_doctor.swanlab.Record"))


def _log_files(path: Path) -> list[Path]:
    """The ``run-*.swanlab`` logs at ``path``: the file, a run folder's, or a swanlog
    folder's runs'."""
    if path.is_file():
        return [path]
    # Regular files only: a FIFO named like a log would hang the read, or hide the folder.
    own = sorted(f for f in path.glob("run-*.swanlab") if f.is_file())
    if own:
        return own[:1]
    found: list[Path] = []
    try:
        folders = sorted(c for c in path.iterdir() if c.name.startswith("run-") and c.is_dir())
    except OSError:
        return []
    for folder in folders[:_MAX_RUNS]:
        found += sorted(f for f in folder.glob("run-*.swanlab") if f.is_file())[:1]
    return found


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        try:
            logs = _log_files(path)
        except OSError:
            return 0
        return 90 if logs and has_magic(logs[0], MAGIC) else 0
    if head.startswith(MAGIC):
        return 95 if path.suffix == ".swanlab" else 85
    return 0


def _config(folder: Path, notes: list[str]) -> dict[str, Any]:
    """``files/config.yaml``: each key's ``value`` ({} when absent or unreadable: noted)."""
    path = folder / "files" / "config.yaml"
    if not path.is_file():
        return {}
    try:
        loaded = read_yaml(path)
    except InputError as exc:  # a broken side file (or no PyYAML) must not stop the metrics
        notes.append(f"config left out: {exc}")
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {str(k): v["value"] if isinstance(v, dict) and "value" in v else v
            for k, v in loaded.items()}


def read_swanlab_log(path: Path) -> TrackedRun:
    """One run's points, name, project and id from its ``.swanlab`` log."""
    data = read_bytes(path)
    if len(data) < _HEADER.size or not data.startswith(MAGIC):
        raise FormatError(f"{path}: not a SwanLab run log (no :SWL header)")
    _, ident, version = _HEADER.unpack_from(data)
    notes: list[str] = []
    if ident != _IDENT:
        raise FormatError(f"{path}: not a SwanLab run log (bad header magic)")
    if version != _VERSION:
        notes.append(f"log format version {version} (version {_VERSION} expected): read as "
                     f"version {_VERSION}")
    record_class = _record_class()
    from google.protobuf.message import DecodeError

    start = None
    state = None
    steps: list[int] = []
    keys: list[str] = []
    values: list[float] = []
    bad = 0
    record = record_class()
    for raw in iter_log_records(data, notes):
        try:
            record.ParseFromString(raw)
        except DecodeError:
            bad += 1
            continue
        scalar = record.scalar
        key = scalar.key  # "" unless a scalar record: the common case tested first
        if key:
            if not key.startswith(_SYSTEM_PREFIX):
                steps.append(scalar.step)
                keys.append(key)
                values.append(scalar.value.number)
        elif record.HasField("start"):
            start = (record.start.project, record.start.name, record.start.id)
        elif record.HasField("finish"):
            state = _STATES.get(record.finish.state, str(record.finish.state))
    if bad:
        notes.append(f"{plural(bad, 'record')} that "
                     f"{agree(bad, 'is not a SwanLab record was', 'are not SwanLab records were')} "
                     "skipped")
    project, name, run_id = start or ("", "", "")
    folder = path.parent
    summary: dict[str, Any] = {"state": state or "running (no finish record)"}
    if start is None:
        notes.append("no start record: the run is named after its folder")
    return TrackedRun(
        name=name or folder.name, run_id=run_id or folder.name, group=project,
        steps=step_array(steps), keys=keys,
        values=np.array(values, dtype=np.float64), config=_config(folder, notes), summary=summary,
        notes=notes)


def _load(path: Path, options: LoadOptions) -> list[Run]:
    files = _log_files(path)
    if not files:
        raise FormatError(f"{path}: no SwanLab run log (run-*/run-<id>.swanlab) found")
    notes: list[str] = []
    found = read_each(files, lambda f: [read_swanlab_log(f)], notes)
    return build_runs(found, path, FORMAT, options, notes)


IMPORTER = Importer(
    name=FORMAT,
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)

