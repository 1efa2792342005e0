"""What a report says and in which order, shared by the terminal and Markdown reports (pure
text, no rich): a finding's one sentence, the findings in the order they began, the root
cause in words, and the one line of skipped checks with what each needs."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from grpo_doctor.findings import MIN_STEPS_FOR_HEALTHY, Check, Diagnosis, RootCause, Status
from grpo_doctor.recipe import next_run_settings
from grpo_doctor.text import step_text, without_mode_name

_NEEDS = re.compile(r"needs (.+?)(?:: not logged|,? none logged)\b.*")
_MAP_OPTION = re.compile(r"--map \S+=[^\s)]+")


def status_words(diagnosis: Diagnosis) -> str:
    """The status as a headline says it: "healthy (selected checks only)" where --select left
    checks out (a crashed run read "HEALTHY" under --select numerical_failure, a CI grep's
    word; the note below it said why; nu33)."""
    if diagnosis.status == "healthy" and (diagnosis.config or {}).get("ignored"):
        return "healthy (selected checks only)"
    return diagnosis.status


def sentence(check: Check) -> str:
    """A finding's summary without a leading clause that only repeats the mode's name
    ("advantage collapse: 98% of groups ..." under the heading advantage_collapse)."""
    return without_mode_name(check.summary, check.mode)


def by_onset(diagnosis: Diagnosis) -> list[Check]:
    """The findings in the order they began: by the onset each shows (an earlier episode it
    came back from is an incident, not its start), the root cause first at a tie, then upstream
    first (the root cause's timeline)."""
    from grpo_doctor.root_cause import timeline

    findings = list(diagnosis.findings)
    try:
        events = timeline(findings)
    except Exception:  # a report never fails on the order it shows things in
        events = []
    first: dict[str, int] = {}
    for rank, event in enumerate(events):
        first.setdefault(event.check.mode, rank)
    root = diagnosis.root_cause.mode if diagnosis.root_cause is not None else None
    return sorted(findings, key=lambda c: (c.onset_step or 0, c.mode != root,
                                           first.get(c.mode, len(events))))


def cause_name(cause: RootCause) -> tuple[str, str]:
    """The root cause's name and what follows it: the event it is when it is no failure mode,
    with the finding that saw it ("weights_reset", " (seen as entropy_blowup)"; the finding's
    name alone had read as a policy blowing up; nu34), else its finding's name and ""."""
    if cause.cause and cause.cause != cause.mode:
        return cause.cause, f" (seen as {cause.mode})"
    return cause.mode, ""


def cause_text(diagnosis: Diagnosis) -> str | None:
    """The root cause in words: its finding's sentence when the cause is that finding's
    summary, else what the root cause says (the learning rate, a catastrophic update)."""
    cause = diagnosis.root_cause
    if cause is None:
        return None
    try:
        check = diagnosis.check(cause.mode)
    except KeyError:
        return cause.summary
    return sentence(check) if cause.summary == check.summary else cause.summary


def cause_label(diagnosis: Diagnosis) -> str:
    """"root cause", or "main finding" when its first action says nothing broke (a run
    converging with its entropy spent: "root cause: entropy_collapse" read as a failure)."""
    cause = diagnosis.root_cause
    calm = cause is not None and cause.first_action.startswith("nothing urgent")
    return "main finding" if calm else "root cause"


def critical_apart(diagnosis: Diagnosis) -> str | None:
    """Where the root cause is a warning and the run critical: the critical findings apart
    from it ("length_hacking from step 1"), so the status and the root cause do not read as
    a contradiction (a CRITICAL headline above a warning root cause, with nothing saying why;
    nu33). None otherwise."""
    cause = diagnosis.root_cause
    if cause is None or diagnosis.status != "critical":
        return None
    root = next((c for c in diagnosis.checks if c.mode == cause.mode), None)
    if root is None or root.status is not Status.WARNING:
        return None
    apart = [c for c in diagnosis.findings if c.status is Status.CRITICAL]
    if not apart:
        return None
    said = ", ".join(f"{c.mode}" + (f" from step {step_text(c.onset_step)}"
                                     if c.onset_step is not None else "") for c in apart)
    one = len(apart) == 1
    return (f"{said}, apart from the root cause: the status is critical for "
            f"{'it' if one else 'them'}, and the plan below has "
            f"{'its fix' if one else 'their fixes'}")


def cause_after_mode(diagnosis: Diagnosis, step: Callable[[int], str]) -> str:
    """What follows the root cause's mode on its line: " at step N: <its words>", or, when
    its words are an earlier episode already dated at N ("at step N, as seen then: ..."),
    those words with the step said once."""
    cause = diagnosis.root_cause
    what = cause_text(diagnosis) or ""
    if cause is None or cause.step is None:
        return f": {what}"
    dated = f"at step {step_text(cause.step)}, "
    if what.startswith(dated):
        return f" at step {step(cause.step)}, {what[len(dated):]}"
    return f" at step {step(cause.step)}: {what}"


def skip_reason(check: Check) -> str:
    """What a skipped check needs, short: the ``--map`` that would feed it from a column the
    run has, the metric to log, or the rule's own reason (a log too short)."""
    reason = check.summary or check.reason or "skipped"
    option = _MAP_OPTION.search(check.reason or reason)
    if option:
        return option.group()
    needs = _NEEDS.fullmatch(reason)
    if not needs:
        return reason
    what = needs.group(1)
    options = what.split(" or ")
    if len(options) > 3:  # the rest are in `explain`: the line stays one line
        return f"log one of {', '.join(options[:3])}, or {len(options) - 3} more"
    if len(options) > 2 and not any("+" in o for o in options):
        return "log one of " + ", ".join(options)
    return "log " + what


def skipped_line(checks: Sequence[Check]) -> str:
    """The skipped checks, those that need the same thing together:
    ``entropy_collapse, entropy_blowup (log entropy); tool_spam (log tool_calls)``."""
    from grpo_doctor.rules import AGENTIC

    groups: dict[str, list[str]] = {}
    blind = [c for c in checks if c.status is Status.SKIPPED]
    # A run that logs no tool metric is no agentic run: its tool checks are one short gap
    # (a healthy verl report had run to 16 lines on them).
    no_tools = [c for c in blind if c.mode in AGENTIC and skip_reason(c).startswith("log ")]
    for c in blind:
        if len(no_tools) == len(AGENTIC) and c in no_tools:
            groups.setdefault("agentic runs only: no tool metric logged", []
                              ).append(c.mode)
        else:
            groups.setdefault(skip_reason(c), []).append(c.mode)
    return "; ".join(f"{', '.join(modes)} ({why})" for why, modes in groups.items())


def passed(diagnosis: Diagnosis) -> list[str]:
    return [c.mode for c in diagnosis.checks if c.status is Status.OK
            and not c.evidence.get("unsettled")]


def unsettled(diagnosis: Diagnosis) -> list[Check]:
    """Checks that judged the run and raised nothing without passing it ("not improving, but
    not going backwards either"): listed apart, as a pass would contradict the findings."""
    return [c for c in diagnosis.checks if c.status is Status.OK and c.evidence.get("unsettled")]


def skipped(diagnosis: Diagnosis) -> list[Check]:
    return [c for c in diagnosis.checks if c.status is Status.SKIPPED]


def extra_hints(diagnosis: Diagnosis) -> list[str]:
    """``--map`` hints not already given as a skipped check's reason."""
    said = " ".join(c.reason or "" for c in skipped(diagnosis))
    out = []
    for hint in diagnosis.hints:
        option = _MAP_OPTION.search(hint)
        if option is None or option.group() not in said:
            out.append(hint)
    return out


def next_run(diagnosis: Diagnosis) -> tuple[str, str] | None:
    """(the note, its fixes) of the settings for the next run that a report shows under its
    verdict: on a run with no root cause, healthy or judged long enough to say nothing shows it
    learns (on a few pasted lines, a setting for the next run is noise beside what they show).
    None otherwise."""
    if diagnosis.root_cause is not None or diagnosis.status not in ("healthy", "inconclusive"):
        return None
    if diagnosis.status == "inconclusive" and diagnosis.run.n_steps < MIN_STEPS_FOR_HEALTHY:
        return None
    return next_run_settings(diagnosis.notes)
