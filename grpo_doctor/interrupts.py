"""Stopping a long-running command: SIGTERM (a job script or a scheduler ending it) stops it
as Ctrl-C does, so it still reports what it has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def interrupt_on_sigterm() -> Callable[[], None]:
    """Let SIGTERM (a job script stopping the watch) end it as Ctrl-C does; returns the undo."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except (ValueError, OSError):  # pragma: no cover - platforms without SIGTERM handlers
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
