"""The settings in a Hugging Face ``training_args.bin``, read without running its pickle.

Every checkpoint a ``transformers.Trainer`` saves (TRL's GRPOTrainer among them) holds the
run's arguments beside its ``trainer_state.json``: ``torch.save(self.args, ...)``, a pickle of
the ``TrainingArguments`` (or ``GRPOConfig``) object. It is the one record of the learning
rate, beta, group size, temperature and completion budget a trainer-state log was made with.

Unpickling it the usual way imports transformers, trl and torch and runs whatever the pickle
names: a file from elsewhere could run anything. Here no class is ever imported: every class
the pickle names becomes an inert stand-in that records what it was built from, and the
dataclass's fields are read off the state it was given. Enums (``SchedulerType('linear')``)
and devices read as their value. Both torch formats are read: the zip archive (torch >= 1.6,
its ``data.pkl``) and the older stream of pickles, as is a pickle written without torch.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

from grpo_doctor.errors import FormatError
from grpo_doctor.files import read_bytes

_MAX_BYTES = 4 * 1024 * 1024
#: Pickles read from one stream: the old torch format holds a magic number, a protocol
#: version and system info before the object.
_MAX_PICKLES = 5
_MAX_CLASSES = 2000
_MAX_DEPTH = 12


class _StandIn:
    """An object of a class the pickle names, never imported: what it was built from."""

    pickled_name = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> _StandIn:
        obj = object.__new__(cls)
        obj.__dict__.update(args=args, state=None, items={})
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.__dict__["state"] = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__dict__["items"][key] = value

    def append(self, value: Any) -> None:
        self.__dict__["items"][len(self.__dict__["items"])] = value

    def extend(self, values: Any) -> None:
        for value in values:
            self.append(value)


class _InertUnpickler(pickle.Unpickler):
    """An unpickler that imports nothing: each global it is asked for is a stand-in class."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self._classes: dict[str, type[_StandIn]] = {}

    def find_class(self, module: str, name: str) -> type[_StandIn]:
        key = f"{module}.{name}"
        if key not in self._classes:
            if len(self._classes) >= _MAX_CLASSES:
                raise pickle.UnpicklingError("too many classes")
            self._classes[key] = type("StandIn", (_StandIn,), {"pickled_name": key})
        return self._classes[key]

    def persistent_load(self, pid: Any) -> None:
        return None  # a tensor's storage: no setting lives there


def read_training_args(path: Path) -> dict[str, Any]:
    """The fields of the arguments object pickled in ``path`` (``training_args.bin``), as
    plain values. FormatError when it holds none; InputError when it cannot be read."""
    with contextlib.suppress(OSError):  # read_bytes says why a path cannot be read
        if path.stat().st_size > _MAX_BYTES:
            raise FormatError(f"{path}: {path.stat().st_size:,} bytes is not a saved "
                              "training_args.bin")
    data = read_bytes(path)
    fields = _fields(_pickle_bytes(path, data))
    if fields is None:
        raise FormatError(f"{path}: not a saved training_args.bin (no pickled arguments "
                          "object in it)")
    return fields


def _pickle_bytes(path: Path, data: bytes) -> bytes:
    """The pickle inside a torch zip archive, or ``data`` itself."""
    if not data.startswith(b"PK"):
        return data
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            member = next((m for m in archive.infolist()
                           if m.filename.rsplit("/", 1)[-1] == "data.pkl"), None)
            if member is None:
                raise FormatError(f"{path}: a zip archive without a torch data.pkl")
            if member.file_size > _MAX_BYTES:
                raise FormatError(f"{path}: its data.pkl unpacks to {member.file_size:,} bytes, "
                                  "not a saved training_args.bin")
            return archive.read(member)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        raise FormatError(f"{path}: a damaged zip archive") from None


def _fields(data: bytes) -> dict[str, Any] | None:
    """The state of the first pickled object with named fields in ``data``."""
    stream = io.BytesIO(data)
    for _ in range(_MAX_PICKLES):
        try:
            obj = _InertUnpickler(stream).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                IndexError, KeyError, RecursionError, MemoryError, UnicodeDecodeError,
                OverflowError):
            return None
        state = _state(obj)
        if state is not None:
            return {str(k): _plain(v, 1) for k, v in state.items() if isinstance(k, str)}
    return None


def _state(obj: Any) -> dict[Any, Any] | None:
    """The fields ``obj`` was rebuilt with: its ``__setstate__`` dict (a dataclass's
    ``__dict__``; the first of a ``(dict, slots)`` pair)."""
    if not isinstance(obj, _StandIn):
        return None
    state = obj.__dict__["state"]
    if isinstance(state, tuple) and state and isinstance(state[0], dict):
        state = state[0]
    return state if isinstance(state, dict) and state else None


def _plain(value: Any, depth: int) -> Any:
    """``value`` as plain data: a stand-in as its fields, or as the one value it was made
    from (an enum member, a device); what carries no setting as None."""
    if depth > _MAX_DEPTH:
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()
                if isinstance(k, str | int | float | bool)}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, _StandIn):
        state = _state(value)
        if state is not None:
            return _plain(state, depth)
        items = value.__dict__["items"]
        if items:
            return _plain(items, depth)
        args = value.__dict__["args"]
        if len(args) == 1 and isinstance(args[0], bool | int | float | str):
            return args[0]
    return None
