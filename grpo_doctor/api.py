"""What the CLI calls, usable from a notebook too. Exit codes live here."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_doctor.config import DoctorConfig, Settings, failing_statuses
from grpo_doctor.engine import diagnose
from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.exit_codes import EXIT_FINDINGS, EXIT_OK
from grpo_doctor.findings import Diagnosis
from grpo_doctor.hints import require_metrics
from grpo_doctor.sources import load_runs
from grpo_doctor.store import Run

if TYPE_CHECKING:
    import pandas as pd


def exit_code(diagnoses: list[Diagnosis], fail_on: str, *, strict: bool = False) -> int:
    """0 when no run's status fails under ``fail_on`` (critical | warning | inconclusive |
    never; ``strict``: inconclusive fails too), else 1."""
    bad = failing_statuses(fail_on, strict=strict)
    return EXIT_FINDINGS if any(d.status in bad for d in diagnoses) else EXIT_OK


# --- bundled example runs -------------------------------------------------------------------


def example_names() -> list[str]:
    folder = resources.files("grpo_doctor") / "examples"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv"))


def example_path(name: str) -> Path:
    """The path of a bundled example run (they ship inside the package)."""
    if name not in example_names():
        raise InputError(f"no example named {name!r}; examples: {', '.join(example_names())}")
    return Path(str(resources.files("grpo_doctor") / "examples" / f"{name}.csv"))


@dataclass(frozen=True)
class Result:
    run: Run
    diagnosis: Diagnosis


def diagnose_source(
    source: str | os.PathLike[str],
    settings: Settings | None = None,
    *,
    input_format: str | None = None,
    run: str | None = None,
    step_column: str | None = None,
) -> list[Result]:
    """Load every run in ``source`` and diagnose each (the work behind ``diagnose``)."""
    s = settings or Settings()
    try:
        runs = load_runs(source, format=input_format, column_map=s.checked_map(),
                         step_column=step_column, run=run)
    except FormatError:
        # A folder of runs and a name from its audit table: the run of that name, found as
        # audit finds them (helper-90: every name copied from `audit real-runs` was refused).
        named = (_named_in_folder(source, run, s, step_column)
                 if run is not None and input_format is None and os.path.isdir(source) else [])
        if not named:
            raise
        runs = named
    for r in runs:
        require_metrics(r)
    cfg = s.doctor_config()
    return [Result(r, diagnose(r, cfg)) for r in runs]


def _named_in_folder(folder: str | os.PathLike[str], run: str, s: Settings,
                     step_column: str | None) -> list[Run]:
    """The one run named ``run`` (as audit names it: a run's name, or ``name (source)``)
    among the runs an audit of ``folder`` would read; empty when none or several."""
    from grpo_doctor.discovery import expand
    from grpo_doctor.errors import GrpoDoctorError
    from grpo_doctor.importers import name_matches

    sources, _ = expand([os.fspath(folder)])
    found: list[tuple[Run, str]] = []
    for src in sources:
        try:
            found += [(r, src.key) for r in load_runs(
                src.path, format=src.format, column_map=s.checked_map(),
                step_column=step_column)]
        except GrpoDoctorError:
            continue
    picked = name_matches([r.name for r, _ in found], run) or name_matches(
        [f"{r.name} ({key})" for r, key in found], run)
    return [found[picked[0]][0]] if len(picked) == 1 else []


def diagnose_frame(
    frame: pd.DataFrame,
    config: DoctorConfig | None = None,
    *,
    name: str = "dataframe",
    step_column: str | None = None,
    column_map: Mapping[str, str] | None = None,
    run_config: Mapping[str, Any] | None = None,
    run: str | None = None,
) -> Diagnosis:
    """Diagnose a run held in a pandas DataFrame (one row per logged record, the logger's own
    column names: a notebook's table, ``wandb.Api().run(PATH).history()``), as ``diagnose``
    would the same values in a CSV. ``run_config`` is the run's settings (its trainer arguments),
    read as evidence as a log's own config is; ``column_map`` maps canonical names to columns
    (``{"reward_mean": "my_reward"}``); ``run`` picks one run of a frame holding several. See
    :func:`~grpo_doctor.importers.in_memory.run_from_frame` for how the step is found."""
    from grpo_doctor.importers.in_memory import run_from_frame

    found = run_from_frame(frame, name=name, step_column=step_column, column_map=column_map,
                           config=run_config, run=run)
    require_metrics(found)
    return diagnose(found, config)


def diagnose_log_history(
    history: Sequence[Mapping[str, Any]],
    config: DoctorConfig | None = None,
    *,
    name: str = "trainer",
    column_map: Mapping[str, str] | None = None,
    run_config: Mapping[str, Any] | None = None,
) -> Diagnosis:
    """Diagnose a Hugging Face Trainer's ``log_history`` (``trainer.state.log_history``, a list
    of the dicts it logged), as ``diagnose`` would its ``trainer_state.json``. Pass
    ``run_config=trainer.args.to_dict()`` so that the settings count as evidence."""
    from grpo_doctor.importers.in_memory import run_from_log_history

    run = run_from_log_history(history, name=name, column_map=column_map, config=run_config)
    require_metrics(run)
    return diagnose(run, config)


def _page_name(index: int, label: str) -> str:
    import re

    return f"{index + 1:04d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', label)[:80]}.html"


def audit_html_paths(result, folder: str | os.PathLike[str]) -> list[Path]:
    """The files ``write_audit_html`` writes: one page per run, then ``index.html``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --html for an audit takes a folder")
    return [out / _page_name(i, run.label) for i, run in enumerate(result.runs)] + [
        out / "index.html"]


def write_audit_html(result, settings: Settings, folder: str | os.PathLike[str], *,
                     force: bool = False) -> Path:
    """One HTML report per audited run in ``folder`` and an ``index.html`` linking them
    (worst first; unreadable sources listed as errors). Every file is checked before any is
    written. Runs are read again here: the audit's workers return their diagnoses as plain
    records, without the curves a chart needs."""
    from grpo_doctor.atomic import check_all, write
    from grpo_doctor.reporters.html import IndexEntry, index_entry, render_html, render_index

    *pages, index = check_all(audit_html_paths(result, folder), force=force)
    entries: list[IndexEntry] = []
    cfg = settings.doctor_config()
    for audited, page in zip(result.runs, pages):
        source = audited.record["run"]["source"]
        runs = load_runs(source, column_map=settings.checked_map())
        run = next((r for r in runs if r.name == audited.name), runs[0])
        diagnosis = diagnose(run, cfg)
        write(page, render_html(diagnosis, run, settings.params))
        entries.append(index_entry(diagnosis, page.path.name))
    entries += [IndexEntry(name=e.source, status="error", findings=(e.error,))
                for e in result.errors]
    return write(index, render_index(entries))
