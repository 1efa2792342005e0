"""Preflight: the recipe's knowledge before the GPUs start.

Reads a run's configuration (a TRL ``GRPOConfig`` as YAML or JSON, a verl config YAML with
Hydra-style ``key=value`` overrides, an OpenRLHF or verl command line saved in a text file,
or any run source grpo-doctor reads, through its logged config), judges each knob against
the recipe (``recipe``), and says which checks the run's logs will leave blind: the metrics
its trainer does not log by default (no mean log-prob: the LLD check cannot run), with how
to log them. Pure functions over the parsed config, but ``read_preflight_source`` reads the
file it is given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_doctor import recipe
from grpo_doctor.errors import ConfigError, FormatError, InputError
from grpo_doctor.importers._config_file import (
    CONFIG_SUFFIXES,
    MAX_DEPTH,
    depth,
    named_config,
    parent_files,
    read_config_file,
    read_small,
    with_base_config,
)
from grpo_doctor.importers.command_line import coerce, parse_command_line, set_dotted
from grpo_doctor.importers.interpolation import resolve_interpolations
from grpo_doctor.importers.sidecar import CAPTURE_HEAD
from grpo_doctor.metrics import Metric
from grpo_doctor.text import knob_value

#: What TRL's ``GRPOConfig`` sets when a config file leaves a knob out (TRL 1.x; checked
#: against ``trl.GRPOConfig()`` by scripts/make_fixtures_preflight.py).
TRL_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-6, "beta": 0.0, "num_generations": 8, "temperature": 1.0,
    "epsilon": 0.2, "max_grad_norm": 1.0, "max_completion_length": 512,
    "loss_type": "dapo", "num_iterations": 1, "mask_truncated_completions": False,
}

#: What ms-swift's GRPO sets where its launch leaves a knob out, over TRL's trainer underneath
#: (c77; ms-swift swift/arguments/sft_args.py: learning_rate 1e-5 for a full fine-tune, 1e-4
#: for its default tuner, LoRA; rlhf_args.py: beta 0.04 for GRPO, temperature 0.9).
SWIFT_DEFAULTS: dict[str, Any] = {**TRL_DEFAULTS, "beta": 0.04, "temperature": 0.9}
#: ms-swift's launch keys naming the tuner ("lora", its default, or "full").
_SWIFT_TUNER = ("tuner_type", "train_type")

#: The canonical metrics each framework logs by default (what its logger writes every step
#: without extra code); a check whose metrics are not among them will be skipped.
LOGGED_BY_DEFAULT: dict[str, frozenset[str]] = {
    "trl": frozenset({
        Metric.REWARD_MEAN.value, Metric.REWARD_STD.value, Metric.KL.value,
        Metric.ENTROPY.value, Metric.RESPONSE_LENGTH_MEAN.value,
        Metric.TRUNCATION_RATIO.value, Metric.ZERO_STD_FRACTION.value,
        Metric.CLIP_FRACTION.value, Metric.GRAD_NORM.value, Metric.LEARNING_RATE.value,
        Metric.LOSS.value}),
    "verl": frozenset({
        Metric.REWARD_MEAN.value, Metric.ENTROPY.value, Metric.KL.value,
        Metric.RESPONSE_LENGTH_MEAN.value, Metric.TRUNCATION_RATIO.value,
        Metric.CLIP_FRACTION.value, Metric.GRAD_NORM.value, Metric.LEARNING_RATE.value,
        Metric.LOSS.value, Metric.HELDOUT_SCORE.value}),
    "openrlhf": frozenset({
        Metric.REWARD_MEAN.value, Metric.KL.value, Metric.RESPONSE_LENGTH_MEAN.value,
        Metric.LOSS.value, Metric.LEARNING_RATE.value}),
}
LOGGED_BY_DEFAULT["ms-swift"] = LOGGED_BY_DEFAULT["trl"]  # TRL's trainer, TRL's logs

#: How to log what a blind check needs, per canonical metric.
HOW_TO_LOG: dict[str, str] = {
    Metric.LOG_PROB_MEAN.value: "log the mean log-prob of the sampled (or the correct) "
    "completions each step, e.g. as train/log_prob_mean from a callback; the LLD death spiral "
    "shows there first",
    Metric.ENTROPY.value: "log the policy's token entropy (TRL logs `entropy`; verl "
    "`actor/entropy`)",
    Metric.ZERO_STD_FRACTION.value: "log the share of groups whose rewards are all equal "
    "(TRL logs it as frac_reward_zero_std)",
    Metric.REWARD_STD.value: "log the reward's std within groups (TRL: reward_std)",
    Metric.GRAD_NORM.value: "log the gradient norm before clipping",
    Metric.KL.value: "log the KL to the reference (TRL logs `kl` only when beta > 0)",
    Metric.CLIP_FRACTION.value: "log the share of clipped importance ratios",
    Metric.TOOL_CALLS.value: "log tool calls per completion (agentic runs)",
    Metric.HELDOUT_SCORE.value: "evaluate on held-out prompts every few hundred steps",
    Metric.TRUNCATION_RATIO.value: "log the share of completions cut at the length cap",
}


@dataclass(frozen=True)
class BlindCheck:
    """A check the run's logs will not let run, and what to log for it."""

    mode: str
    missing: tuple[str, ...]
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "missing": list(self.missing), "how": self.how}


@dataclass(frozen=True)
class Preflight:
    """A config judged against the recipe, before a run."""

    source: str
    framework: str  # trl | ms-swift | verl | openrlhf | open-instruct | unknown
    setup: recipe.Setup
    blind: tuple[BlindCheck, ...] = ()
    defaults: tuple[str, ...] = ()  # knobs read from the framework's defaults
    notes: tuple[str, ...] = field(default=())
    #: Settings that contradict each other, each with its fix (a schedule's floor above its
    #: learning rate): critical, as a knob far outside the recipe is.
    problems: tuple[str, ...] = field(default=())

    @property
    def status(self) -> str:
        """critical: a knob far outside the recipe, or settings that contradict each other;
        warning: one outside it; else ok. A note-only knob (overlong shaping, dynamic sampling
        ...) never counts: it is a note."""
        causes = [r for r in self.setup.outside if not r.setting.note_only]
        if self.problems or any(r.far for r in causes):
            return "critical"
        return "warning" if causes else "ok"

    def to_dict(self) -> dict[str, Any]:
        readings = []
        for r in self.setup.known:
            d = r.to_dict()
            d["recipe_range"] = r.setting.range_text
            d["from_default"] = r.id in self.defaults
            if r.outside:
                d["fix"] = r.fix()
                d["why"] = r.why
                d["note"] = r.setting.note_only  # only a note: not counted in the status
            readings.append(d)
        return {"source": self.source, "framework": self.framework, "status": self.status,
                "knobs": readings, "blind_checks": [b.to_dict() for b in self.blind],
                "notes": list(self.notes), "problems": list(self.problems)}


# --- reading ------------------------------------------------------------------------------------


def read_preflight_source(source: str | os.PathLike[str], overrides: Sequence[str] = ()
                          ) -> tuple[dict[str, Any], str]:
    """A config and its framework from ``source`` (a YAML/JSON config, a saved command line,
    a checkpoint's ``training_args.bin``, a training script's or notebook's code, or a run
    source), with ``KEY=VALUE`` overrides applied (dotted keys set nested values, as Hydra
    does). Bad input raises FormatError or ConfigError."""
    path = Path(source)
    if not path.exists():
        raise FormatError(f"{path}: no such file or folder")
    config: dict[str, Any]
    if path.is_file() and path.suffix.lower() in CONFIG_SUFFIXES:
        config = read_config_file(path)
    elif path.is_file() and path.suffix.lower() == ".bin":
        from grpo_doctor.importers.pickled_args import read_training_args

        config = read_training_args(path)  # a checkpoint's training_args.bin
    elif path.is_file() and path.suffix.lower() in (".ipynb", ".py"):
        from grpo_doctor.importers.notebook import notebook_config_error, notebook_settings
        from grpo_doctor.importers.notebook_code import code_settings

        # Its GRPOConfig(...) call, parsed, never run.
        # A value the code computes is "not judged", never the framework's default.
        if path.suffix.lower() == ".ipynb":
            config = notebook_settings(path, computed=True)
            broken = None if config else notebook_config_error(path)
            if broken:
                raise FormatError(f"{path}: {broken} (the config cell does not parse)")
            if config and "beta" not in config and _logs_a_kl(path):
                # The TRL it ran on had a KL term (today's default beta 0 logs none).
                config["beta"] = "${not 0: the notebook's log records a KL}"
        else:
            code = read_small(path)
            _refuse_uncompilable(path, code)
            config = code_settings([code], computed=True)
        if not config:
            raise FormatError(f"{path}: no GRPOConfig(...) or TrainingArguments(...) with "
                              "literal settings in its code")
    elif path.is_file() and path.suffix.lower() in (".sh", ".txt", ".cmd", ".bash"):
        text = read_small(path)
        # A launch script, or the arguments a launch printed (argparse's Namespace).
        config = parse_command_line(text) or _printed(text)
        if not config:
            raise FormatError(f"{path}: no --flag value or key=value settings found")
        config = with_base_config(config, (path.parent, Path.cwd()))
    else:
        config = _read_run_config(path)
    if depth(config) > MAX_DEPTH:
        # (flattened recursively downstream: a TOML key 5,000 parts deep had crashed; h117)
        raise FormatError(f"{path}: not a readable config (nested too deeply)")
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip().lstrip("+")
        if not sep or not key:
            raise ConfigError(f"override {item!r}: expected KEY=VALUE")
        set_dotted(config, key, coerce(value.strip()))
    return config, framework_of(config)


def _read_run_config(path: Path) -> dict[str, Any]:
    """The config a run logged, or, for a folder holding no log (or none readable), the
    training config saved in it (``.hydra/config.yaml``, ``training_args.json`` ...)."""
    from grpo_doctor.importers.sidecar import NAMES, find_training_config
    from grpo_doctor.sources import load_runs

    try:
        runs = load_runs(path)
    except (InputError, FormatError) as exc:
        printed = _printed(_head(path)) if path.is_file() else {}
        if printed:
            return printed  # a console capture of the launch, with no metrics yet
        if not path.is_dir() and isinstance(exc, FormatError):
            # Said as preflight reads it: "not a training log" alone had read as if a log
            # were what it wanted (helper-83, a PNG).
            raise FormatError(f"{path}: not a trainer config, a launch command or a "
                              "training log grpo-doctor can read") from None
        if not path.is_dir():
            raise
        found = find_training_config(path)
        if found is not None:
            return dict(found[1])
        saved = next((path / n for n in NAMES if (path / n).is_file()), None)
        if saved is None:
            raise
        return read_config_file(saved)  # says what is wrong with it, or holds no knob
    config = dict(runs[0].config or {})
    if not config and path.is_file():
        config = _printed(_head(path))
    if not config:
        raise FormatError(f"{path}: the run logged no config; give the trainer's config "
                          "file instead")
    return config


def _printed(text: str) -> dict[str, Any]:
    """The settings a console capture prints in words (a launch echoed, argparse's Namespace,
    the Trainer's arguments), when two training knobs or more are among them."""
    from grpo_doctor.importers.console_text import printed_settings

    settings = printed_settings(text)
    return settings if len(recipe.read_config(settings).known) >= 2 else {}


def _head(path: Path) -> str:
    """A console capture's first megabyte as text: it prints its launch first."""
    from grpo_doctor.importers._common import read_head

    return read_head(path, CAPTURE_HEAD).decode("utf-8", errors="replace")


def _logs_a_kl(path: Path) -> bool:
    """Whether the run a notebook holds logged a KL to the reference (TRL logs it only when
    beta is not 0: a notebook run on an older TRL, whose default beta was 0.04)."""
    from grpo_doctor.sources import load_runs

    try:
        runs = load_runs(path)
    except (InputError, FormatError):
        return False
    kl = runs[0].finite_series(Metric.KL.value)[1] if runs else ()
    return bool(len(kl)) and float(max(abs(float(v)) for v in kl)) > 0


def _refuse_uncompilable(path: Path, code: str) -> None:
    """A FormatError naming the line when Python would refuse the script (a syntax error, a
    keyword given twice): its settings never ran. Compiled, never run."""
    try:
        compile(code, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        raise FormatError(f"{path}: {where}{exc.msg} (Python refuses this script: its settings "
                          "never ran)") from None
    except (ValueError, RecursionError, MemoryError, OverflowError):
        raise FormatError(f"{path}: not a Python script Python can compile") from None


#: OpenRLHF's flag names for the recipe's knobs.
_OPENRLHF = {"actor_learning_rate": "learning_rate", "init_kl_coef": "beta",
             "n_samples_per_prompt": "num_generations", "eps_clip": "epsilon",
             "entropy_loss_coef": "entropy_coef", "generate_max_len": "max_completion_length",
             "max_epochs": "num_iterations"}


def framework_of(config: Mapping[str, Any]) -> str:
    """trl, ms-swift, verl, openrlhf, open-instruct, oat, areal, axolotl, prime-rl or unknown,
    from the config's keys. (Only TRL's and ms-swift's defaults are filled in, and only the
    frameworks of LOGGED_BY_DEFAULT get blind checks: the others are named, not assumed.)"""
    keys = set(recipe.flat_config(config))
    tops = {k.split(".", 1)[0] for k in keys}
    if "orchestrator" in tops:
        return "prime-rl"  # (its [trainer] section is no verl trainer; c79)
    if "actor_rollout_ref" in tops or ("algorithm" in tops and "trainer" in tops):
        return "verl"
    if "gconfig" in tops:
        return "areal"
    if "loss_fn" in tops and "policy" in tops:
        return "nemo-rl"
    if "dataset_builder" in tops:
        return "tinker"  # (the Tinker cookbook's group size lives there; h118)
    if "rl_beta" in tops or str(config.get("rl", "")).lower() in ("grpo", "gspo", "dapo"):
        return "axolotl"
    if {"generate_max_length", "oracle", "critic_type"} & tops:
        return "oat"  # (its --pretrain is OpenRLHF's flag too; c79)
    if "rlhf_type" in tops:  # (a stray train_type in a TRL config is no launch; h111)
        return "ms-swift"
    if {"num_samples_per_prompt_rollout", "num_unique_prompts_rollout"} & tops:
        return "open-instruct"  # (TRL's field names beside its own: not TRL's defaults; c79)
    if {"n_samples_per_prompt", "init_kl_coef", "actor_learning_rate", "pretrain"} & tops:
        return "openrlhf"
    if {"num_generations", "per_device_train_batch_size", "beta", "max_completion_length",
            "use_vllm", "scale_rewards", "reward_funcs"} & tops:
        return "trl"
    return "unknown"


# --- judging ------------------------------------------------------------------------------------


def preflight(config: Mapping[str, Any], framework: str | None = None, source: str = "",
              settings: Iterable[recipe.Setting] = recipe.SETTINGS) -> Preflight:
    """``config`` judged against the recipe, with the framework's defaults for the knobs it
    leaves out (TRL's), and the checks its logs will leave blind."""
    framework = framework or framework_of(config)
    config = resolve_interpolations(config)
    if framework == "openrlhf":
        config.update({ours: config[theirs] for theirs, ours in _OPENRLHF.items()
                       if theirs in config and ours not in config})
    defaults: list[str] = []
    unread = _unread_files(config)
    if framework in ("trl", "ms-swift") and not unread:
        # (A launch whose named config was not read: its knobs may be set there; they are
        # not the framework's defaults. A missing file's lr 1e-2 had read "learning_rate 1e-6
        # within the recipe (framework defaults)", OK; h119.)
        flat = recipe.flat_config(config)
        given = TRL_DEFAULTS
        if framework == "ms-swift":
            kind = str(recipe.lookup(flat, ("rlhf_type",))[0]).lower()
            if kind != "grpo":
                raise ConfigError(f"{source + ': ' if source else ''}an ms-swift rlhf_type "
                                  f"{kind} launch: preflight judges GRPO runs (rlhf_type grpo)")
            tuner = str(recipe.lookup(flat, _SWIFT_TUNER)[0] or "lora").lower()
            given = {**SWIFT_DEFAULTS, "learning_rate": 1e-5 if tuner == "full" else 1e-4}
            if tuner != "full":
                # Its default tuner, LoRA, and the other adapters (qlora, dora, ...): an
                # adapter's lr range.
                config.setdefault("use_peft", True)
        for key, value in given.items():
            setting = next((s for s in settings if key in s.names or s.id == key), None)
            if setting is None or recipe.lookup(flat, setting.names)[0] is not None:
                continue
            config[key] = value
            defaults.append(setting.id)
    kl_default = recipe.kl_loss_default(recipe.flat_config(config))
    if kl_default is not None and any(s.id == "beta" for s in settings):
        defaults.append("beta")  # (the value itself is put in force by read_config)
    setup = recipe.read_config(config, tuple(settings))
    refuse_bad_values(setup, source)
    if not setup.known:
        missing = (f"; the config it names, {', '.join(unread)}, was not read (not found beside "
                   "it, or not readable)" if unread else ": not a GRPO training config?")
        raise ConfigError(f"{source + ': ' if source else ''}none of the recipe's settings "
                          f"found ({', '.join(s.id for s in list(settings)[:4])} ...)"
                          f"{missing}")
    notes = []
    named = named_config(config)
    if named is not None:
        # (a launch whose named file is missing had been judged on its flags without a word)
        notes.append(f"the config file the launch names, {named}, was not read (not found "
                     "beside the launch or in the working folder, or not readable): only the "
                     "launch's own flags are judged, and no framework default is assumed")
    parents = [n for n in unread if n != named]
    if parents:
        notes.append(f"the parent config it names, {', '.join(parents)}, was not read (not "
                     "found beside it, or not readable): only its own settings are judged")
    if framework == "trl" and "beta" in defaults:
        notes.append("TRL's default beta is 0: no KL term, and TRL then logs no `kl` (the KL "
                     "drift check goes blind); the recipe uses 0.01-0.05")
    flat = recipe.flat_config(config)
    groups = recipe.group_based(flat)
    problems = []
    floor = recipe.schedule_floor_above(flat)
    if floor is not None:
        _, value, lr, fix = floor
        problems.append(f"{fix}: the schedule's floor ({knob_value(value)}) is above "
                        f"learning_rate {knob_value(lr)}, so the lr will climb "
                        f"{value / lr:.3g}x to it instead of decaying")
    return Preflight(source, framework, setup, blind_checks(framework, setup, groups=groups),
                     tuple(defaults), tuple(notes), tuple(problems))


refuse_bad_values = recipe.refuse_bad_values  # where preflight's callers look for it


def blind_checks(framework: str, setup: recipe.Setup | None = None, *, groups: bool = True
                 ) -> tuple[BlindCheck, ...]:
    """The rules whose metrics the framework does not log by default (none for an unknown
    framework: nothing is known about its logs). ``groups`` False: the advantage estimator
    uses no groups (PPO's GAE), so there are no equal-reward groups to log."""
    from grpo_doctor.rules import AGENTIC, RULES

    logged = set(LOGGED_BY_DEFAULT.get(framework, ()))
    if not logged:
        return ()
    beta = setup.get("beta") if setup is not None else None
    if framework == "trl" and beta is not None and beta.verdict == recipe.OFF:
        logged.discard(Metric.KL.value)  # TRL computes no KL at beta 0
    out = []
    for rule in RULES:
        if rule.id in AGENTIC:
            continue  # agentic runs only: a note in `rules`, not a gap in every setup
        if rule.id == "advantage_collapse" and not groups:
            continue  # no groups, no all-equal groups
        missing = [m for m in rule.requires if m not in logged]
        if rule.requires_any and not any(all(m in logged for m in group)
                                         for group in rule.requires_any):
            missing += [m for m in rule.requires_any[0] if m not in logged and m not in missing]
        if not missing:
            continue
        how = "; ".join(HOW_TO_LOG.get(m, f"log {m}") for m in missing)
        out.append(BlindCheck(rule.id, tuple(missing), how))
    return tuple(out)


# --- reports ------------------------------------------------------------------------------------


def render_preflight_text(pre: Preflight, width: int = 80) -> str:
    """The terminal report: status, each knob outside the recipe with its fix, the knobs
    inside it in one line, the blind checks with how to log their metrics."""
    import textwrap

    def wrap(text: str, head: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=head,
                             subsequent_indent=" " * len(head)) or [head]

    lines = [f"{pre.status.upper()} · preflight of {pre.source or 'config'} "
             f"({pre.framework if pre.framework != 'unknown' else 'framework not recognised'})"]
    def outside_line(r: recipe.Reading, mark: str) -> list[str]:
        risks = ", ".join("catastrophic updates" if lk.mode == recipe.CATASTROPHIC_UPDATE
                          else lk.mode for lk in r.links)
        return wrap(f"{_fix_text(r, pre)}: {r.sentence()}; {r.why}"
                    + (f"; risks {risks}" if risks else ""), f"{mark} ")

    # The knobs the status counts (✗ far, ! outside), then the note-only ones (overlong
    # shaping, dynamic sampling ...: only contributing risks, never a warning) under a heading
    # that says so: a note is never marked as if it were what made the status.
    counted = [r for r in pre.setup.outside if not r.setting.note_only]
    noted = [r for r in pre.setup.outside if r.setting.note_only]
    if pre.problems:
        lines += ["", "Settings that contradict each other:"]
        for problem in pre.problems:
            lines += wrap(problem, "✗ ")
    if counted:
        lines += ["", "Outside the recipe:"]
        for r in sorted(counted, key=lambda r: not r.far):
            lines += outside_line(r, "✗" if r.far else "!")
    if noted:
        lines += ["", "Outside the recipe, notes (contributing risks only; not counted in the "
                      "status):"]
        for r in noted:
            lines += outside_line(r, "·")
    inside = [r for r in pre.setup.known if r.verdict == recipe.OK and not _no_number(r)]
    given = [r for r in inside if r.id not in pre.defaults]
    assumed = [r for r in inside if r.id in pre.defaults]
    if inside:
        lines.append("")
    if given:
        lines += wrap(", ".join(f"{r.name} {r.value_text}" for r in given),
                      "within the recipe: ")
    if assumed:  # not in the file: the framework's defaults, as outside lines mark them
        lines += wrap(", ".join(f"{r.name} {r.value_text}" for r in assumed),
                      "within the recipe (framework defaults): ")
    by_log = [r for r in pre.setup.known if r.verdict == recipe.OK and _no_number(r)]
    if by_log:
        # Not the recipe's words beside the value: "32 (long enough for the task's answers)"
        # read as a verdict (helper-38).
        lines += wrap(", ".join(_value_text(r, pre) for r in by_log),
                      "not judged (no number in the recipe): ")
    unknown = [r for r in pre.setup.known if r.verdict in (recipe.UNKNOWN, recipe.NOT_APPLICABLE)]
    if unknown:
        lines += wrap(", ".join(_value_text(r, pre) + (f" ({r.why})" if r.why else "")
                                for r in unknown), "not judged: ")
    if pre.blind:
        lines += ["", "Checks the run's logs will leave blind (log these to run them):"]
        for b in pre.blind:
            lines += wrap(b.how, f"  {b.mode}: ")
    for note in pre.notes:
        lines += ["", *wrap(note, "note: ")]
    return "\n".join(lines) + "\n"


def _unread_files(config: Mapping[str, Any]) -> list[str]:
    """The config files ``config`` names that were not read into it: a launch's ``config``
    and a NeMo-RL ``defaults:`` parent (each is merged in, and its name dropped, when read)."""
    named = named_config(config)
    return [*([named] if named else []), *parent_files(config)]


def _value_text(r: recipe.Reading, pre: Preflight) -> str:
    """A knob and its value, marked when the file did not set it (the JSON's ``defaults``;
    the text had dropped the mark on a line of knobs not judged; c79)."""
    default = " (framework default)" if r.id in pre.defaults else ""
    text = r.value_text
    if text.startswith("${") and text.endswith("}") and " " in text:
        # Our own word for a value not known ("${computed in the code}"), said as words: it
        # read as a template left unfilled (nu33). A config's ${oc.env:LR} stays as written.
        return f"{r.name} ({text[2:-1]}){default}"
    return f"{r.name} {text}{default}"


def _fix_text(r: recipe.Reading, pre: Preflight) -> str:
    """The knob's fix, its value marked when the file did not set it: "beta 0 (framework
    default) -> 0.01-0.05", the marker beside the value it is about."""
    fix = r.fix()
    if r.id not in pre.defaults:
        return fix
    head = f"{r.name} {r.value_text} "
    if fix.startswith(head):
        return f"{head}(framework default) {fix[len(head):]}"
    return f"{fix} (framework default)"


def _no_number(reading: recipe.Reading) -> bool:
    """A number setting the recipe gives no range (the completion budget: "long enough for
    the task's answers"): no value is within it or outside it; the log's truncation judges."""
    s = reading.setting
    return (s.kind == "number" and s.low is None and s.high is None
            and not any(c.isdigit() for c in s.range_text))


def render_preflight_markdown(pre: Preflight) -> str:
    out = [f"## {pre.status} · preflight of `{pre.source}` ({pre.framework})", "",
           "| knob | value | recipe | verdict | change |", "|---|---|---|---|---|"]
    for r in pre.setup.known:
        fix = r.fix() if r.outside else ""
        default = " (framework default)" if r.id in pre.defaults else ""
        note = " (note)" if r.outside and r.setting.note_only else ""
        verdict = "by the log" if r.verdict == recipe.OK and _no_number(r) else r.verdict
        out.append(f"| {r.name} | {r.value_text}{default} | {r.setting.range_text} | "
                   f"{verdict}{note} | {fix} |")
    if pre.blind:
        out += ["", "**Blind checks** (log these metrics to run them):", ""]
        out += [f"- `{b.mode}`: {b.how}" for b in pre.blind]
    out += ["", *[f"> {n}" for n in pre.notes]] if pre.notes else []
    return "\n".join(out) + "\n"


def exit_code(pre: Preflight, fail_on: str) -> int:
    """1 when the preflight's status is at or above ``fail_on`` (critical, warning, never)."""
    order = {"ok": 0, "warning": 1, "critical": 2}
    limit = {"critical": 2, "warning": 1, "never": 3}.get(fail_on)
    if limit is None:
        raise ConfigError(f"--fail-on must be critical, warning or never, got {fail_on!r}")
    return 1 if order[pre.status] >= limit else 0
