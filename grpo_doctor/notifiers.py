"""Where ``watch`` sends its alerts besides the terminal: ``--notify cmd:COMMAND`` and
``--notify wandb``. A notifier returns a warning line when it could not send, and never stops
the watch."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from grpo_doctor.errors import ConfigError
from grpo_doctor.findings import Status
from grpo_doctor.monitor import Alert

if TYPE_CHECKING:
    from grpo_doctor.importers.wandb_offline import WandbTarget


class Watched(Protocol):
    """What a notifier needs of the watch (``watch.Watcher`` or ``watch.WatchAll``)."""

    path: Path

    @property
    def several(self) -> bool: ...

    def wandb_target(self) -> WandbTarget | None: ...


class CommandNotifier:
    """``--notify cmd:COMMAND``: run COMMAND (split like a shell would, never through one) with
    the alert as JSON on stdin. Returns a warning line when it fails."""

    def __init__(self, command: str, timeout: float = 60.0) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"--notify cmd:{command}: {exc}") from None
        if not self.argv:
            raise ConfigError("--notify cmd: needs a command, e.g. cmd:'notify-send grpo-doctor'")
        self.timeout = timeout

    def __call__(self, alert: Alert) -> str | None:
        payload = json.dumps(alert.to_dict(), ensure_ascii=False, default=str)
        try:
            done = subprocess.run(self.argv, input=payload, text=True, capture_output=True,
                                  timeout=self.timeout, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"--notify cmd: {self.argv[0]} failed: {exc}"
        if done.returncode != 0:
            tail = (done.stderr or "").strip().splitlines()[-1:] or [""]
            return f"--notify cmd: {self.argv[0]} exited {done.returncode} {tail[0]}".rstrip()
        return None


def _wandb_credentials() -> bool:
    """Whether an API key is configured (environment or netrc), without asking the network."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    import netrc
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or ""
    try:
        return netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


class WandbNotifier:
    """``--notify wandb``: ``alert`` on the watched W&B run, joined as a secondary writer (W&B
    "shared" mode, so the training process keeps the run). Without a W&B run or credentials it
    says so once and stays silent."""

    def __init__(self, watcher: Watched) -> None:
        self.watcher = watcher
        self.run: Any = None
        self.disabled: str | None = None

    def problem(self) -> str | None:
        """Why alerts cannot be sent (None when they can), once the run is known."""
        if self.watcher.several:
            return (f"--notify wandb: {self.watcher.path} holds several runs; alerts go to one "
                    "W&B run (watch its folder, or pick it with --run)")
        target = self.watcher.wandb_target()
        if target is None:
            return (f"--notify wandb: {self.watcher.path} is not a W&B run; alerts are not sent "
                    "to W&B")
        if target.offline:
            return (f"--notify wandb: {target.folder.name} is an offline W&B run; alerts are not "
                    "sent to W&B")
        if not _wandb_credentials():
            return ("--notify wandb: no W&B credentials (WANDB_API_KEY or `wandb login`); "
                    "alerts are not sent to W&B")
        return None

    def _join(self, target: WandbTarget) -> Any:
        import wandb

        settings = wandb.Settings(mode="shared", x_primary=False, x_label="grpo-doctor",
                                  x_update_finish_state=False, silent=True)
        return wandb.init(entity=target.entity or None, project=target.project or None,
                          id=target.run_id, settings=settings)

    def __call__(self, alert: Alert) -> str | None:
        if self.disabled is not None:
            return None
        why = self.problem()
        if why is not None:
            self.disabled = why
            return why
        target = self.watcher.wandb_target()
        assert target is not None
        try:
            import wandb

            if self.run is None:
                self.run = self._join(target)
            levels: Any = wandb.AlertLevel  # type: ignore[attr-defined]
            level = (levels.ERROR if alert.severity is Status.CRITICAL else levels.WARN
                     if alert.severity is Status.WARNING else levels.INFO)
            what = ("cleared" if alert.cleared else "advice revised" if alert.revised
                    else f"eased to {alert.severity.value}" if alert.eased
                    else alert.severity.value)
            self.run.alert(title=f"grpo-doctor: {alert.mode} ({what})",
                           text=alert.line(), level=level)
        except Exception as exc:  # any failure of a notifier must not stop the watch
            self.disabled = f"--notify wandb: failed ({type(exc).__name__}: {exc}); not retried"
            return self.disabled
        return None

    def close(self) -> None:
        if self.run is not None:
            with contextlib.suppress(Exception):
                self.run.finish()
            self.run = None


def notifiers(specs: Sequence[str], watcher: Watched) -> list[Callable[[Alert], str | None]]:
    """``--notify`` values: ``wandb`` or ``cmd:COMMAND``."""
    out: list[Callable[[Alert], str | None]] = []
    for spec in specs:
        if spec == "wandb":
            out.append(WandbNotifier(watcher))
        elif spec.startswith("cmd:"):
            out.append(CommandNotifier(spec[len("cmd:"):]))
        else:
            raise ConfigError(f"--notify must be 'wandb' or 'cmd:COMMAND', got {spec!r}")
    return out

