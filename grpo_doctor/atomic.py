"""Writing files without ever losing what a user had: temp file in the same folder, then
rename; an existing file is replaced only when the caller says so (``--force``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from grpo_doctor.errors import InputError


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, force: bool = False) -> Path:
    target = Path(path)
    if target.exists() and not force:
        raise InputError(f"{target}: already exists; pass --force to replace it")
    if target.is_dir():
        raise InputError(f"{target}: is a folder")
    folder = target.parent if str(target.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from exc
    try:
        # mkstemp makes the file private (0600); a report should get the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from exc
        raise
    return target
