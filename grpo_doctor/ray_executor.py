"""``audit --executor ray``: each source diagnosed in a Ray task, on the cluster the training
already runs on.

The cluster is ``--ray-address``, else ``RAY_ADDRESS``, else a local Ray instance started for
the audit (and stopped after it; ``--jobs`` is then its CPU count). Each task runs
:func:`grpo_doctor.audit.diagnose_one`, exactly what a local worker process runs, on a batch of
a few sources, and returns the same plain records; the records are judged and ordered by
the same code as a local audit's (``audit.audit``), so the report and the exit code are the
same byte for byte. The tasks read the runs themselves, from shared or object storage: each
node needs grpo-doctor installed (the cluster's image, or a runtime environment) and its own
read access to the runs.

A task that fails or is lost (its worker or node died; Ray retries it once) is an error row
for its source, never a silent gap. Ctrl-C stops a local instance with its tasks, or cancels
the tasks not yet done on a cluster, and the command exits 130.

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

# grpo-doctor has no package-index name: the extra comes from a clone (or a git URL).
INSTALL_HINT = ("audit --executor ray needs Ray: pip install ray "
                "(or the ray extra, from a clone: pip install '.[ray]')")


def _import_ray() -> Any:
    # Usage statistics would leave this machine: off unless the user turned them on.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


#: Seconds a cluster's address may take to accept a connection before it is unreachable.
_CONNECT_SECONDS = 5.0


def _reachable(where: str) -> None:
    """An InputError when ``where`` (``host:port``, ``ray://host:port``) accepts no connection:
    Ray itself retries an unreachable cluster for a minute and more, printing as it goes
    (helper-73). "auto" and other forms are left to Ray."""
    import socket

    host, sep, port = where.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_SECONDS).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise InputError(f"cannot reach the Ray cluster at {where} ({why}); check --ray-address "
                         f"or RAY_ADDRESS") from None


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
    else:
        _reachable(where)
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


def diagnose_batch(work: Callable[..., dict[str, Any]], sources: Sequence[Source],
                   column_map: Mapping[str, str], cfg: DoctorConfig) -> list[dict[str, Any]]:
    """One task's work: ``work`` (``diagnose_one``) of each of a few sources."""
    return [work(src, column_map, cfg) for src in sources]


#: Sources per task, at most: a task costs the driver and the scheduler a few milliseconds,
#: about a tenth of a run's diagnosis, so runs go in batches; each CPU still gets 8 tasks.
MAX_BATCH = 16


def batch_size(total: int, cpus: float) -> int:
    return max(1, min(MAX_BATCH, total // max(1, int(cpus) * 8)))


def run_tasks(sources: Sequence[Source], column_map: Mapping[str, str], cfg: DoctorConfig,
              work: Callable[..., dict[str, Any]], *, address: str | None = None,
              jobs: int | None = None, progress: ProgressFn | None = None
              ) -> list[dict[str, Any]]:
    """``work(source, column_map, cfg)`` (``audit.diagnose_one``) of every source in Ray
    tasks: the records in source order. Sources go in batches (:data:`MAX_BATCH`); a batch
    whose task fails is run again one source per task, so that only the source that failed
    is an error row."""
    ray = _import_ray()
    started = _connect(ray, address, jobs)
    total = len(sources)
    results: list[dict[str, Any]] = [{} for _ in sources]
    pending: dict[Any, list[int]] = {}
    try:
        task = ray.remote(max_retries=1)(diagnose_batch)
        shared = (ray.put(work), ray.put(dict(column_map)), ray.put(cfg))
        size = batch_size(total, ray.cluster_resources().get("CPU", 1))

        def submit(indices: list[int]) -> None:
            ref = task.remote(shared[0], [sources[i] for i in indices], shared[1], shared[2])
            pending[ref] = indices

        for first in range(0, total, size):
            submit(list(range(first, min(first + size, total))))
        if progress:
            progress(0, total)
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                indices = pending.pop(ref)
                try:
                    for i, record in zip(indices, ray.get(ref)):
                        results[i] = record
                except Exception as exc:  # the task raised, or its worker or node was lost
                    if len(indices) > 1:
                        for i in indices:
                            submit([i])
                        continue
                    results[indices[0]] = _failed(exc)
                done += len(indices)
            if progress:
                progress(done, total)
    except BaseException:
        # Ctrl-C (or any error): what has not finished is stopped. A local instance is stopped
        # whole by the shutdown below. On a cluster the tasks are cancelled, without force: a
        # forced cancel kills the worker while its reply may be on its way, and Ray 2.60's
        # driver then aborts on "Tried to complete task that was not pending" (exit 1, not 130).
        if not started:
            for ref in pending:
                with contextlib.suppress(Exception):  # a task that finished meanwhile
                    ray.cancel(ref, force=False)
        raise
    finally:
        if started:
            ray.shutdown()
    return results
