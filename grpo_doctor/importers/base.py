"""What an importer is (:class:`Importer`), what it is told (:class:`LoadOptions`) and how it
reads a growing log (:class:`Incremental`, :class:`Delta`). A leaf of the importers package:
every format module and the remote client import these from here, and the package's
``__init__`` (detection, dispatch) re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_doctor.store import Run

if TYPE_CHECKING:
    from grpo_doctor.live_store import Rows


@dataclass(frozen=True)
class LoadOptions:
    """What the user said about how to read a source."""

    column_map: Mapping[str, str] = field(default_factory=dict)
    step_column: str | None = None
    run: str | None = None  # pick one run by name from a source holding several
    #: A run folder's copy read before (``watch``): read again while it is not behind the
    #: richest, so the watch does not flip between copies that fill at different paces.
    keep_copy: str | None = None


@dataclass(frozen=True)
class Delta:
    """What one incremental read brought: the new rows, the state to resume from, and whether
    more than rows changed (a new file or column set, a config record, corruption), which only
    a rebuild (``Incremental.load``) can express."""

    rows: Rows
    state: Any
    structural: bool = False


@dataclass(frozen=True)
class Incremental:
    """An importer's reader for a log that is still being written (``watch``).

    ``read(path, state, options, final)`` reads what was appended after ``state`` (None: from
    the start) and returns the new rows and the state to resume from. A partly written last
    line or record is left for the next read, unless ``final`` (the log is complete: a last
    line without a newline is read, as ``load`` reads it). A state is small, opaque and never
    changed in place: reading again from an earlier state reads the same bytes again. It raises
    ``importers.incremental.Restarted`` when the log shrank, was replaced or was rewritten.

    ``load(path, state, options)`` is the Run the importer's ``load`` reads from the bytes
    ``state`` has consumed (None while they hold none). ``policy`` is how rows logged at one
    step combine (``live_store.LiveStore``): ``"last"`` or ``"update"``.
    """

    read: Callable[[Path, Any, LoadOptions, bool], Delta]
    load: Callable[[Path, Any, LoadOptions], Run | None]
    policy: str = "last"


@dataclass(frozen=True)
class Importer:
    """A source format: how to recognise it and how to read it into runs.

    ``sniff(path, head)`` returns a confidence from 0 (not mine) to 100 (certainly mine);
    ``head`` is the first ``HEAD_BYTES`` of a file, or ``b""`` for a folder. ``incremental``
    reads a growing log from where it left off; without one, ``watch`` reads the source whole
    again whenever its files change.
    """

    name: str
    sniff: Callable[[Path, bytes], int]
    load: Callable[[Path, LoadOptions], list[Run]]
    reads_folders: bool = False
    # A folder its sniffer claims is one source as a whole, whatever else lies in it (an
    # mlruns/ store, one run's folder): ``audit`` does not look inside.
    whole_folder: bool = False
    incremental: Incremental | None = None
