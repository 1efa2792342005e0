"""A run's settings beyond its log, and the log's word on them.

A run's log often holds no config; its settings then come from the user (``[config]``,
``--train-config``) or from a file beside the log (a checkpoint's ``training_args.bin``, a
notebook's code: ``Run.config_beside``). Neither is taken on trust: a setting the log's own
config sets otherwise, or the log's own curves contradict (a learning rate it never ran at, a
completion budget its completions outran), is said in a note and the log's value used; a file
the log contradicts gives nothing; a value no trainer takes is left out; the user's settings
win over a file's. The diagnosis (``engine``) and the live monitor read a run through this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from grpo_doctor.rules import knobs
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, plural, step_text


def with_run_settings(run: Run, given: Mapping[str, object]) -> Run:
    """``run`` with every setting it was made with that its log does not hold: the ones the
    user gave (``[config]``, ``--train-config``), then those of a config beside the log,
    each checked against what the log recorded (``with_given_config``)."""
    run, merged, beside = _with_beside_as_given(run, given)
    return with_given_config(run, merged, beside)


def _with_beside_as_given(run: Run, given: Mapping[str, object]
                          ) -> tuple[Run, dict[str, object], dict[str, str]]:
    """``run`` without the settings read from a config beside its log, and those settings
    as given ones under the user's (``[config]``, ``--train-config`` win over a file that may
    be another run's), with the file each came from: checked against the log as given
    settings are (``with_given_config``)."""
    if not run.config_beside:
        return run, dict(given), {}
    from grpo_doctor.recipe import flat_config

    found = {k: v for k, v in run.config.items() if k in run.config_beside}
    flat = flat_config(found)
    refused = _bad_values(flat)
    flat = {k: v for k, v in flat.items() if k not in refused}
    own = {k: v for k, v in run.config.items() if k not in found}
    where = next(iter(run.config_beside.values()))
    beside = {k: run.config_beside.get(k.split(".", 1)[0], where) for k in flat
              if k not in given}
    notes = [*run.notes, *(f"{why} (in {where}): left out, no trainer takes it"
                           for why in refused.values())]
    # A setting the user gave under another spelling wins too (a NeMo-RL run given
    # loss_fn.reference_policy_kl_penalty 1.0 had read a verl script's kl_loss_coef 0.001
    # from a folder above it; c77).
    respelled = sorted(k for k in flat if k not in given and _given_otherwise(k, given))
    overridden = sorted(k for k in flat if k in given and str(flat[k]) != str(given[k])
                        and _recipe_key(k)) + respelled
    if overridden:
        notes.append(f"the settings given ([config] or --train-config) are used over {where} "
                     f"for {', '.join(f'{k} ({flat[k]} there)' for k in overridden)}")
    flat = {k: v for k, v in flat.items() if k not in respelled}
    beside = {k: v for k, v in beside.items() if k not in respelled}
    return (replace(run, config=own, config_beside={}, notes=notes), {**flat, **given},
            beside)


def _given_otherwise(key: str, given: Mapping[str, object]) -> bool:
    """Whether the recipe setting ``key`` reads (a number's) is among ``given`` under another
    of its names."""
    from grpo_doctor.recipe import KL_LOSS_SWITCH, SETTINGS

    def reads(k: str, name: str) -> bool:
        return k == name or k.endswith("." + name)

    for s in SETTINGS:
        if s.kind != "number" or not any(reads(key, name) for name in s.names):
            continue  # (a list of banned tokens is not another's: suppress_tokens, h111)
        names = [n for n in s.names if n != KL_LOSS_SWITCH]  # a switch is no value of beta
        return any(reads(key, name) for name in names) and any(
            reads(k, name) for k in given for name in names if k != key)
    return False


def _recipe_key(key: str) -> bool:
    """Whether the recipe reads ``key`` (under any of its settings' names)."""
    from grpo_doctor.recipe import SETTINGS

    return any(key == name or key.endswith("." + name) for s in SETTINGS for name in s.names)


def _bad_values(flat: Mapping[str, object]) -> dict[str, str]:
    """The settings of ``flat`` no trainer takes (a group size of 16.5, a learning rate of
    -1), each with why: refused in a file given to preflight or ``--train-config``, left
    out when read from beside a log."""
    from grpo_doctor.recipe import bad_value, read_config

    out: dict[str, str] = {}
    for reading in read_config(flat).readings:
        why = bad_value(reading)
        if why is not None and reading.source is not None and reading.source in flat:
            out[reading.source] = why
    return out


def with_given_config(run: Run, given: Mapping[str, object],
                      beside: Mapping[str, str] | None = None) -> Run:
    """``run`` with the settings a user gave (the config file's ``[config]``, or
    ``--train-config``) where its log sets none: the log's own config wins where both set a
    knob. ``beside``: the given keys read from a config file beside the log (key -> path),
    said as that file's and not listed as the user's."""
    if not given:
        return run
    from grpo_doctor.recipe import flat_config

    beside = beside or {}
    own = flat_config(run.config) if run.config else {}
    added = {k: v for k, v in given.items()
             if not any(key == k or key.endswith("." + k) for key in own)}
    # A trainer's saved config holds no misspelt key: only the user's are checked.
    unread = _unread_keys({k: v for k, v in given.items() if k not in beside})
    added = {k: v for k, v in added.items() if k not in unread}
    notes = [*run.notes, *_own_config_disagreements(own, given, beside),
             *(f"{k} given: not a setting grpo-doctor reads (did you mean {near}?); it changes "
               "nothing here" for k, near in unread.items())]
    if not added:
        return replace(run, notes=notes)
    before = set(added)
    notes += _logged_disagreements(run, added, beside)
    refuted = sorted(k for k in before - set(added) if k in beside)
    if refuted:
        # The log contradicts the file beside it: the file is likely another run's, and its
        # other settings (a temperature of 2 the log cannot check) are no evidence either.
        where = beside[refuted[0]]
        dropped = sorted(k for k in added if k in beside and _recipe_key(k))
        added = {k: v for k, v in added.items() if k not in beside}
        if dropped:
            notes.append(f"{where} is contradicted by the log ({', '.join(refuted)}): none of "
                         f"its settings is used ({', '.join(dropped)} left out)")
    users = {k: v for k, v in added.items() if k not in beside}
    if not users:
        return replace(run, config={**run.config, **added}, notes=notes)
    # "The log's own config": the log may still log one of them as a metric (a learning
    # rate curve); what it lacks is a config naming them.
    note = ("settings given for the run ([config] or --train-config; the log's own config "
            f"names none of them): {_given_words(users)}")
    return replace(run, config={**run.config, **added}, notes=[*notes, note])


def _given_words(added: Mapping[str, object]) -> str:
    """The given settings the advice reads, by the names the file gives them, and how many
    other keys came with them ("learning_rate, num_generations and 20 more keys"): a
    config file of 40 keys listed whole buries the report it heads."""
    read = sorted(k for k in added if _recipe_key(k))
    if not read:
        return ", ".join(sorted(added))
    rest = len(added) - len(read)
    return ", ".join(read) + (f" and {plural(rest, 'more key', 'more keys')}" if rest else "")


def _origin(key: str, beside: Mapping[str, str]) -> str:
    """How a setting came: "given" (by the user), or where it was read ("in
    training_args.bin beside the log", "in the notebook's code")."""
    return f"in {beside[key]}" if key in beside else "given"


def _own_config_disagreements(own: Mapping[str, object], given: Mapping[str, object],
                              beside: Mapping[str, str]) -> list[str]:
    """Given settings the log's own config sets otherwise: the log's value is used (it is
    what the run ran with), and a note says so rather than drop the given one silently."""
    from grpo_doctor.recipe import SETTINGS, as_number, lookup
    from grpo_doctor.text import knob_value

    def shown(value: object) -> str:
        x = as_number(value)
        return knob_value(x) if x is not None else str(value)

    out = []
    for s in SETTINGS:
        value, key = lookup(given, s.names)
        logged, own_key = lookup(own, s.names)
        if key is None or own_key is None or value is None or logged is None:
            continue
        if key.rsplit(".", 1)[-1] != own_key.rsplit(".", 1)[-1]:
            continue  # two settings one recipe knob stands for (verl's kl_loss_coef, kl_coef)
        x, y = as_number(value), as_number(logged)
        same = (x is not None and y is not None and abs(x - y) <= 1e-9 * max(abs(x), abs(y))
                ) or str(value).strip().lower() == str(logged).strip().lower()
        if not same:
            out.append(f"{key} {shown(value)} {_origin(key, beside)}, but the log's own config "
                       f"has {own_key} "
                       f"{shown(logged)}: the log's value is used (is the config this run's?)")
    return out


def _unread_keys(given: Mapping[str, object]) -> dict[str, str]:
    """Given keys the advice reads under no name and that look like a misspelling of one
    (``temprature``), with the name they are near: said, since they change nothing."""
    import difflib

    from grpo_doctor.recipe import SETTINGS

    names = {n.rsplit(".", 1)[-1] for s in SETTINGS for n in s.names}
    out = {}
    for key in given:
        last = str(key).rsplit(".", 1)[-1]
        if last in names:
            continue
        # 0.88: a letter dropped or swapped (temprature, learning_rte), not another real
        # key of the trainers (num_train_epochs is 0.8 from num_ppo_epochs).
        near = difflib.get_close_matches(last, sorted(names), n=1, cutoff=0.88)
        # (One numbered twin of another, adam_beta1 beside adam_beta2, is no misspelling.)
        digits = "0123456789"
        if near and last.rstrip(digits) != near[0].rstrip(digits) and not _another_word(
                last, near[0]):
            out[str(key)] = near[0]
    return out


_INFLECTIONS = ("s", "es", "d", "ed")


def _another_word(key: str, name: str) -> bool:
    """Whether ``key`` is a real key beside the knob ``name``, not a typo of it: a whole word
    added (verl's ``clip_ratio_c``, ``max_tool_response_length``) or a word inflected (Adam's
    ``betas``, NeMo-RL's ``enabled`` and ``params_dtype``). A NeMo-RL config had drawn nine
    "did you mean" notes."""
    words, knob = key.split("_"), name.split("_")
    if set(knob) < set(words):
        return True
    return len(words) == len(knob) and words != knob and all(
        a == b or any(a == b + x or b == a + x for x in _INFLECTIONS)
        for a, b in zip(words, knob))


def _logged_disagreements(run: Run, added: dict[str, object],
                          beside: Mapping[str, str]) -> list[str]:
    """Given settings the log's own curve contradicts (a learning rate of 7.9e-6 given, the
    logged one peaking at 9.8e-5). A logged peak above the given value proves the run ran at
    it: the log's value is kept (``added`` loses the key). One below it may be a schedule
    that decayed before the log began: the given value stands, unless the log shows the
    schedule's peak (it begins at its first logging interval). Either way a note says so.
    ``beside``: the keys read from a config file beside the log, said as that file's."""
    from grpo_doctor.recipe import SETTINGS, as_flag, as_number, lookup
    from grpo_doctor.text import knob_value

    out: list[str] = []
    for s in SETTINGS:
        value, key = lookup(added, s.names)
        x = as_number(value)
        if s.id == "max_completion_length" and key is not None and x is not None:
            # A stop of its own in the same config (a wall-clock max_time) cuts completions
            # under the budget: no contradiction, the budget is this run's (trial 82b).
            stops = any(str(k).rsplit(".", 1)[-1] in _EARLY_STOPS and v is not None
                        for k, v in {**(run.config or {}), **added}.items())
            capped = None if stops else _cap_contradicted(run, key, x, beside)
            if capped is not None:
                del added[key]
                out.append(capped)
            continue
        if (s.id == "beta" and key in beside and key is not None
                and key.rsplit(".", 1)[-1] == "beta" and x == 0):
            leashed = _beta_contradicted(run, key, beside)
            if leashed is not None:
                del added[key]
                out.append(leashed)
            continue
        if not s.metric or s.metric not in run.frame.columns:
            continue
        if s.id == "entropy_coef" and as_flag(lookup(added, ("use_adaptive_entropy",))[0]):
            continue  # a controller moves it from the configured start: no contradiction
        steps, logged = run.finite_series(s.metric)
        if x is None or key is None or not len(logged) or x <= 0:
            continue
        peak = knobs.schedule_peak(steps, logged)
        if s.id != "learning_rate":
            peak = float(logged[-1])
        if abs(peak - x) <= 0.25 * max(abs(peak), abs(x)):
            continue
        said = f"{key} {knob_value(x)} {_origin(key, beside)}"
        kept = "the given value is used" if key not in beside else "the file's value is used"
        held = _held_until(steps, logged, x) if s.id == "learning_rate" else None
        if held is not None and peak > x:
            # The log ran at the given lr, and above it before or after: the config is this
            # run's; the jump or the burst is what the log adds (a scheduler restarted, a
            # resume, a schedule that starts at its peak).
            high = steps[logged > x * 1.25]
            if len(high) and high[0] < held[0]:
                out.append(f"{said}, as the log's own {s.metric} held from step "
                           f"{step_text(held[0])}; it was up to {knob_value(peak)} before "
                           f"(steps {step_text(high[0])}-{step_text(high[-1])}): {kept}")
            else:
                out.append(f"{said}, as the log's own {s.metric} held until step "
                           f"{step_text(held[1])}; it then rose to {knob_value(peak)}: {kept}")
            continue
        if peak > x or (s.id == "learning_rate" and _peak_seen(steps, logged)):
            del added[key]
            reach = "reaches" if peak > x else "peaks at"
            out.append(f"{said}, but the log's own {s.metric} {reach} {knob_value(peak)}: the "
                       "log's value is used (is the config this run's?)")
        elif s.id == "learning_rate":
            out.append(f"{said}; the log's own {s.metric} is at most {knob_value(peak)} (a "
                       f"schedule that decayed before the log began?): {kept}")
        else:
            out.append(f"{said}; the log's own {s.metric} ends at {knob_value(peak)} (an "
                       f"adaptive coefficient, or another setting of that name?): {kept}")
    return out


#: Generation settings that stop completions before the budget, by their last key part.
_EARLY_STOPS = frozenset({"max_time"})
#: The median share of completions cut from which the longest logged one is the run's cap.
_CUT_AT_CAP = 0.2


def _cap_contradicted(run: Run, key: str, cap: float, beside: Mapping[str, str]) -> str | None:
    """A note when the log's completions ran longer than the completion budget given
    (``max_completion_length`` 256 beside a log whose longest completion is 1849 tokens): the
    budget is not this run's, and the advice must not shrink what the run had."""
    from grpo_doctor.metrics import Metric
    from grpo_doctor.text import knob_value

    # The longest completion logged, else the mean (no mean can pass the cap either).
    _, longest = run.finite_series(Metric.RESPONSE_LENGTH_MAX.value)
    _, cut = run.finite_series(Metric.TRUNCATION_RATIO.value)
    if (len(longest) and len(cut) and cap > 0 and float(np.median(cut)) >= _CUT_AT_CAP
            and float(longest.max()) < 0.8 * cap):
        # Many completions cut, none longer than a fraction of the budget: the run's cap was
        # the log's, not this one (a 1,024 configured, completions cut at 128).
        return (f"{key} {knob_value(cap)} {_origin(key, beside)}, but the log's completions "
                f"are cut at about {fmt(float(longest.max()))} tokens ({float(np.median(cut)):.0%}"
                " of them at that cap): the log's value is used (is the config this run's?)")
    what = "completions reach"
    if not len(longest):
        _, longest = run.finite_series(Metric.RESPONSE_LENGTH_MEAN.value)
        what = "mean completion length reaches"
    if not len(longest) or cap <= 0 or float(longest.max()) <= 1.05 * cap:
        return None
    return (f"{key} {knob_value(cap)} {_origin(key, beside)}, but the log's {what} "
            f"{fmt(float(longest.max()))} tokens: the log's value is used (is the config this "
            "run's?)")


def _beta_contradicted(run: Run, key: str, beside: Mapping[str, str]) -> str | None:
    """A note when TRL's ``beta`` 0, read from a file beside the log, meets a log that records a
    KL to the reference: TRL computes and logs it only when beta is not 0 (a default config
    saved by a newer TRL beside an older run's log), so the run had a leash of unknown
    strength. A beta 0 the user gives is trusted: a custom trainer may log the KL anyway."""
    from grpo_doctor.metrics import Metric

    _, kl = run.finite_series(Metric.KL.value)
    if not len(kl) or float(np.max(np.abs(kl))) <= 0:
        return None
    return (f"{key} 0 {_origin(key, beside)}, but the log records a KL to the reference (up "
            f"to {fmt(float(np.max(kl)))}), which TRL logs only when beta is not 0: beta is "
            "left unknown (is the config this run's?)")


def _held_until(steps: np.ndarray, logged: np.ndarray, x: float) -> tuple[int, int] | None:
    """The first and last step of the log's first stretch of 8 or more logged values within
    5% of ``x`` (a level the run held at the given value), or None. A schedule decaying
    through ``x`` is not held there: a linear decay 5e-6 -> 0 over 250 steps spends 25 steps
    within a quarter of 1e-6, and 1e-6 was read as the run's lr."""
    near = np.abs(logged - x) <= 0.05 * x
    run_len = 0
    for i, ok in enumerate(near):
        run_len = run_len + 1 if ok else 0
        if run_len >= 8 and (i + 1 == len(near) or not near[i + 1]):
            return int(steps[i - run_len + 1]), int(steps[i])
    return None


def _peak_seen(steps: np.ndarray, lr: np.ndarray) -> bool:
    """Whether a logged learning rate shows its schedule's peak: the log begins within its
    first logging interval and the rate is not still rising at its end (a warm-up the log
    cut short). A given value above that peak is contradicted, not a decay the log missed."""
    return len(lr) >= 3 and knobs.starts_with_run(steps) and not lr[-1] > lr[-2]
