"""Launches of one run resumed from a checkpoint, read as the one run they are.

A run resumed from ``checkpoint-100`` after a crash at step 120 is, in most loggers, two logs:
the Trainer's TensorBoard writes each launch under ``runs/<date>_<host>``, wandb starts a new
offline run folder beside the first. Read apart, the second launch is a half run that begins at
a reward already learnt (trial 59: "no progress" on a healthy run), and the first a run that
stopped early. A launch whose first step comes after the run's first step so far and within two
logging intervals of its last is that run resumed; one starting over at step 1 is another run
(a sweep's folders, a run re-launched). From a launch's first step on, its values replace the
earlier launch's (the steps between the checkpoint and the crash were logged twice).

Importers join the launches they read together (:func:`with_resumed`); ``audit``, which reads
each folder as a source of its own, finds them with :func:`chains` over each source's
:class:`Span` and reads the chain again as one source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from grpo_doctor.store import Run
from grpo_doctor.text import plural

__all__ = [
    "LAUNCHES",
    "RELAUNCHED",
    "Span",
    "chains",
    "identity",
    "joined",
    "launch_key",
    "launch_order",
    "launch_stamped",
    "relaunch_notes",
    "span_of",
    "with_resumed",
]

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
#: A launch's time in its folder's name: wandb's ``offline-run-20261207_030011-<id>``, the
#: Trainer's TensorBoard ``Dec07_03-00-11_<host>``.
_STAMP = re.compile(r"(?<!\d)(\d{8})_(\d{6})(?!\d)")
_TRAINER_STAMP = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)(\d{2})_"
                            r"(\d{2})-(\d{2})-(\d{2})_")


@dataclass(frozen=True)
class Span:
    """The steps one launch logged: first, last, its logging interval, and the metrics it
    logged (canonical names; empty when not known)."""

    first: int
    last: int
    gap: float
    metrics: frozenset[str] = frozenset()


def span_of(run: Run) -> Span | None:
    steps = run.steps
    if not len(steps):
        return None
    gap = float(np.median(np.diff(steps))) if len(steps) > 1 else 1.0
    return Span(int(steps[0]), int(steps[-1]), gap, frozenset(run.mapping))


def _alike(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two launches of one run log the same metrics (half of the fewer, at least): a
    ``train/`` and an ``eval/`` writer side by side, the eval's first step inside the
    train's, are two logs, not a resume."""
    return not a or not b or len(a & b) >= 0.5 * min(len(a), len(b))


def _stamp(name: str) -> str | None:
    """A sortable launch time from a folder's name, or None."""
    if m := _STAMP.search(name):
        return m.group(1) + m.group(2)
    if m := _TRAINER_STAMP.match(name):
        return f"{_MONTHS[m.group(1)]:02d}{m.group(2)}{m.group(3)}{m.group(4)}{m.group(5)}"
    return None


def launch_key(name: str) -> str:
    """A folder name's sort key in launch order: its launch time where it is named with one."""
    return _stamp(name) or name


def launch_stamped(name: str) -> bool:
    """Whether a folder is named with its launch's time (the Trainer's ``Dec07_03-00-11_vm``,
    wandb's ``offline-run-20261207_030011-<id>``)."""
    return _stamp(name) is not None


def launch_order(names: Sequence[str], spans: Sequence[Span]) -> list[int]:
    """Indices in the order the launches ran: by the time their folders are named with when
    every one is (a re-resume from an earlier checkpoint starts before the launch it replaces
    ends), else by first step."""
    stamps = [_stamp(name) for name in names]
    if all(stamps):
        return sorted(range(len(names)), key=lambda i: (stamps[i], spans[i].first))
    return sorted(range(len(names)), key=lambda i: (spans[i].first, names[i]))


def identity(run: Run) -> str | None:
    """What names a run across its launches: the Trainer's ``output_dir`` (where a resume
    finds its checkpoint), else its ``run_name``; None when the config names neither."""
    for key in ("output_dir", "run_name"):
        value = run.config.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().rstrip("/")
    return None


def chains(names: Sequence[str], spans: Sequence[Span],
           identities: Sequence[str | None] | None = None) -> list[list[int]]:
    """The launches grouped into runs, each group in launch order: a launch joins the one run
    it resumes (its first step after that run's first and within two logging intervals of its
    last, and the same :func:`identity` where both have one); a launch two runs could claim,
    or none, starts a run of its own."""
    ids = list(identities) if identities is not None else [None] * len(spans)
    runs: list[list[int]] = []
    reach: list[tuple[int, int, float]] = []  # each run's first step, last step, interval
    for i in launch_order(names, spans):
        s = spans[i]
        # A launch that starts within its own first logging interval started from step 0: a
        # fresh run, not a resume; a resume logs at the run's own interval (helper-77: two
        # runs of logging_steps 5 and 10 joined).
        fresh = s.first <= s.gap
        claims = [k for k, (first, last, gap) in enumerate(reach)
                  if not fresh and first < s.first <= last + 2 * gap
                  and 0.5 * gap <= s.gap <= 2 * gap
                  and _alike(spans[runs[k][0]].metrics, s.metrics)
                  and (ids[i] is None or ids[runs[k][0]] is None or ids[i] == ids[runs[k][0]])]
        if len(claims) == 1:
            k = claims[0]
            runs[k].append(i)
            first, _last, gap = reach[k]
            reach[k] = (first, s.last, gap)
        else:
            runs.append([i])
            reach.append((s.first, s.last, s.gap))
    return sorted(runs, key=lambda group: min(group))


#: What the launches of a run are, by the format that read them: a join's note names them.
LAUNCHES = {"tensorboard": "event folders", "wandb-offline": "W&B runs",
            "console": "launches in this log"}

#: What every note of :func:`relaunch_notes` says: a log read with its launches joined
#: carries them, for a folder reading another copy of the run to say too.
RELAUNCHED = "and the run was launched again"


def relaunch_notes(label: str, runs: Sequence[Run]) -> list[str]:
    """What a run's launches say of those that died on an error before the next: read as one
    run, its report would not say it (trial 59)."""
    out = []
    for k, run in enumerate(runs[:-1], 1):
        if run.ending is not None and run.ending.needs_fix:
            how = (f"ended after {run.n_steps:,} logged steps: {run.ending.words()}"
                   if run.ending.kind == "killed" else
                   f"stopped on an error after {run.n_steps:,} logged steps "
                   f"({run.ending.words()})")
            out.append(f"{label}: launch {k} of {len(runs)} {how}, {RELAUNCHED} (resumed?)")
    return out


def _merged(dicts: Sequence[dict]) -> dict:
    out: dict = {}
    for d in dicts:
        out.update(d)
    return out


def joined(parts: Sequence[Run], name: str, source: str, labels: Sequence[str],
           what: str) -> Run:
    """The launches ``parts`` (in launch order) as one run: from each launch's first step on,
    its values; the settings, summary and ending of the latest launch; a note naming the
    launches (``labels``, read as ``what``: "event folders", "W&B runs")."""
    frame = parts[0].frame
    nan_steps = dict(parts[0].nan_steps)
    for part in parts[1:]:
        start = part.first_step if part.first_step is not None else 0
        frame = pd.concat([frame[frame.index < start], part.frame])
        nan_steps = {k: v[v < start] for k, v in nan_steps.items()}
        for k, v in part.nan_steps.items():
            nan_steps[k] = np.concatenate([nan_steps.get(k, np.zeros(0, dtype=v.dtype)), v])
    mapping = _merged([p.mapping for p in parts])
    columns = list(frame.columns)
    frame = frame[[c for c in columns if c in mapping] + [c for c in columns if c not in mapping]]
    frame = frame.astype("float64")
    frame.index = frame.index.astype("int64")
    frame.index.name = "step"
    said = "; ".join(f"{label}: steps {p.first_step}-{p.last_step}"
                     for label, p in zip(labels, parts))
    notes = [f"one run resumed {plural(len(parts) - 1, 'time')}: {len(parts)} {what} read as "
             f"one ({said})", *relaunch_notes(name, parts)]
    for part in parts:
        notes += [n for n in part.notes if n not in notes]
    unmapped: list[str] = []
    for part in parts:
        unmapped += [c for c in part.unmapped if c not in unmapped]
    last = parts[-1]
    return Run(
        name=name, source=source, format=parts[0].format, frame=frame,
        config=_merged([p.config for p in parts]), mapping=mapping,
        conversions=_merged([p.conversions for p in parts]),
        proxies=_merged([p.proxies for p in parts]), unmapped=unmapped, nan_steps=nan_steps,
        step_source=parts[0].step_source,
        duplicate_steps=sum(p.duplicate_steps for p in parts),
        restarts=sum(p.restarts for p in parts), notes=notes, summary=last.summary,
        reward_roles=_merged([p.reward_roles for p in parts]),
        config_beside=_merged([p.config_beside for p in parts]),
        passed_over=[x for p in parts for x in p.passed_over], ending=last.ending,
        resumed_at=tuple(int(p.first_step) for p in parts[1:] if p.first_step is not None),
    )


def with_resumed(runs: Sequence[Run], labels: Sequence[str], what: str,
                 name: str, source: str) -> list[Run]:
    """``runs`` (launches found side by side, ``labels`` naming each) with each run's
    launches joined (named ``name``, read from ``source``); the others as they were, in their
    order."""
    spans = [span_of(run) for run in runs]
    if len(runs) < 2 or any(s is None for s in spans):
        return list(runs)
    groups = chains(labels, [s for s in spans if s is not None], [identity(r) for r in runs])
    if all(len(g) == 1 for g in groups):
        return list(runs)
    out = []
    for group in groups:
        if len(group) == 1:
            out.append(runs[group[0]])
            continue
        # Two resumed runs side by side keep their own launches' names.
        own_name = name if sum(len(g) > 1 for g in groups) == 1 else runs[group[0]].name
        out.append(joined([runs[i] for i in group], own_name, source,
                          [labels[i] for i in group], what))
    return out
