"""``audit --executor ray``: each source diagnosed in a Ray task, on the cluster the training
already runs on.

The cluster is ``--ray-address``, else ``RAY_ADDRESS``, else a local Ray instance started for
the audit (and stopped after it; ``--jobs`` is then its CPU count). Each task runs
:func:`grpo_doctor.audit.diagnose_one`, exactly what a local worker process runs, and returns
the same plain record; the records are judged and ordered by the same code as a local audit's
(``audit.audit``), so the report and the exit code are the same byte for byte. The tasks read
the runs themselves, from shared or object storage: each node needs grpo-doctor installed
(the cluster's image, or a runtime environment) and its own read access to the runs.

A task that fails or is lost (its worker or node died; Ray retries it once) is an error row
for its source, never a silent gap. Ctrl-C cancels the tasks not yet done, stops a local
instance, and the command exits 130.

Ray is imported only here, and only for this executor: ``grpo-doctor --help`` stays fast, and
without the ``ray`` extra the audit says in one line what to install.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from grpo_doctor.errors import ConfigError, InputError

if TYPE_CHECKING:
    from grpo_doctor.discovery import Source
    from grpo_doctor.engine import DoctorConfig

ProgressFn = Callable[[int, int], None]

INSTALL_HINT = ("audit --executor ray needs Ray: pip install 'grpo-doctor[ray]' "
                "(or pip install ray)")


def _import_ray() -> Any:
    # Usage statistics would leave this machine: off unless the user turned them on.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


def _connect(ray: Any, address: str | None, jobs: int | None) -> bool:
    """Join the cluster (or start a local instance); whether this call started Ray here."""
    import logging

    if ray.is_initialized():
        return False
    where = address or os.environ.get("RAY_ADDRESS") or None
    options: dict[str, Any] = {"address": where, "logging_level": logging.ERROR,
                               "log_to_driver": False, "configure_logging": False,
                               "ignore_reinit_error": True}
    if where is None:
        options.update(include_dashboard=False, num_cpus=jobs)
    # Ray's own notices (with configure_logging off they would reach stderr through logging's
    # last-resort handler): the audit's stderr keeps to its progress and its errors.
    logging.getLogger("ray").setLevel(logging.ERROR)
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        text = " ".join(str(exc).split())[:200]
        what = f"the Ray cluster at {where}" if where else "a local Ray instance"
        raise InputError(f"cannot start or reach {what} ({text}); check --ray-address or "
                         f"RAY_ADDRESS") from None
    return True


def _failed(exc: BaseException) -> dict[str, Any]:
    """The error row of a task that failed or was lost."""
    name = type(exc).__name__
    text = " ".join(str(exc).split())
    first = text.split(". ", 1)[0][:200]
    return {"error": f"the Ray task failed ({name}: {first})" if first else
            f"the Ray task failed ({name})"}


def run_tasks(sources: Sequence[Source], column_map: Mapping[str, str], cfg: DoctorConfig,
              *, address: str | None = None, jobs: int | None = None,
              progress: ProgressFn | None = None,
              work: Callable[..., dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``diagnose_one`` (or ``work``, for tests) of every source, each in a Ray task: the
    records in source order."""
    ray = _import_ray()
    from grpo_doctor.audit import diagnose_one

    started = _connect(ray, address, jobs)
    total = len(sources)
    results: list[dict[str, Any]] = [{} for _ in sources]
    pending: dict[Any, int] = {}
    try:
        task = ray.remote(max_retries=1)(work or diagnose_one)
        shared_map, shared_cfg = ray.put(dict(column_map)), ray.put(cfg)
        pending = {task.remote(src, shared_map, shared_cfg): i for i, src in enumerate(sources)}
        if progress:
            progress(0, total)
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=min(len(pending), 64), timeout=0.5)
            if not ready:
                ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    results[i] = ray.get(ref)
                except Exception as exc:  # the task raised, or its worker or node was lost
                    results[i] = _failed(exc)
                done += 1
            if progress:
                progress(done, total)
    except BaseException:
        for ref in pending:  # Ctrl-C (or any error): what has not finished is cancelled
            with contextlib.suppress(Exception):  # a task that finished meanwhile
                ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()
    return results
