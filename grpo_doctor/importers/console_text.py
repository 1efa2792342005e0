"""Console text: a capture cut into the pieces its processes printed, and the settings it
prints in words (a launch echoed, argparse's ``Namespace``, the Trainer's arguments printed
whole, ``key=value`` trainer arguments, Hydra overrides, checkpoints saved). Read as text,
never evaluated; the metrics are the console importer's."""
from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grpo_doctor.importers._common import to_number
from grpo_doctor.importers.command_line import launch_flags, printed_namespace
from grpo_doctor.store import MODEL_PARAMS, SAVED_CHECKPOINTS, TRAINABLE_PARAMS

_MAX_KV_CHARS = 1000  # a "key=value" line longer than this is not one
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_RAY_PREFIX = re.compile(r"\((?:[^()\n]{0,80}? )?pid=\d+[^()\n]{0,60}\)[ \t]?")
_LOGGING_STEPS = re.compile(r"\blogging_steps['\"]?\s*[=:]\s*(\d+)")
_TRAINER_ARG = re.compile(
    r"\b(max_steps|num_train_epochs|per_device_train_batch_size|gradient_accumulation_steps|"
    r"num_generations|learning_rate|beta|max_completion_length|logging_steps|"
    # the sampling and clipping settings a script prints beside them (trial 64: a printed
    # temperature=3.0 was passed over where the same line's beta=-2.0 was read)
    r"temperature|top_p|top_k|min_p|repetition_penalty|num_iterations|steps_per_generation|"
    r"epsilon|epsilon_high|max_grad_norm|entropy_coef|warmup_steps|warmup_ratio|save_steps)"
    r"=([^\s,)]+)"
)
#: A line about an evaluation's or a generic engine's sampling, whose temperature=0 is no
#: rollout setting (helper-84: vLLM's SamplingParams of a validation pass read as the run's).
_EVALUATION = re.compile(r"SamplingParams\(|\b(?:eval|val|valid|validation|test)\w*",
                         re.IGNORECASE)
_SAMPLING_ARGS = frozenset({"temperature", "top_p", "top_k", "min_p", "repetition_penalty"})
#: ``print(training_args)``: the Trainer's arguments printed one ``key=value,`` per line
#: between ``GRPOConfig(`` and ``)`` (TrainingArguments.__str__): every field is the run's.
_ARGS_OPEN = re.compile(
    r"\b(?:GRPOConfig|RLOOConfig|GRPOTrainingArguments|TrainingArguments)\(\s*$")
_ARGS_FIELD = re.compile(r"^\s*([A-Za-z_]\w*)=(.*?),?\s*$")
_TOTAL_STEPS = re.compile(r"\bTotal (?:training )?steps:\s*(\d+)")
_OVERRIDE = re.compile(r"\+{0,2}([A-Za-z_][\w-]*(?:\.[\w-]+)+)=(.*)", re.DOTALL)


@dataclass
class Segment:
    """A piece of printed text: a line, a ``\\r`` fragment, or one Ray process's part of a line."""

    text: str
    source: str  # the Ray process prefix it was printed under ('' when none)


#: A line a console prints a step's metrics on, as its readers take them (a printed dict's
#: metric key, verl's "step:N - ", a "Step N |" or "Iter N:" line): a cheap test that text is
#: a run's log, not a launch's capture of its settings.
_METRIC_LINE = re.compile(
    r"['\"](?:(?:train|rollout|actor)/)?(?:loss|reward|grad_norm|kl)['\"]\s*:"
    r"|(?<![\w/])step:\s?\d+\s+-\s"
    # (a number after a key: "Step 1: downloading model" is a launch's progress, helper-88)
    r"|(?<![\w/.-])(?:[Ss]tep|Iter|[Ii]teration)\s*:?\s+\d+(?:\s*/\s*\d+)?\s*[|,:]"
    r"\s*[A-Za-z][\w ./-]{0,40}?\s*:?\s*[-+]?\.?\d"
    # a progress bar's postfix (OpenRLHF: "..., policy_loss=0.1, reward=0.2]")
    r"|\b(?:policy_loss|loss|reward|kl)=[-+]?\.?\d")


def holds_metric_lines(text: str) -> bool:
    """Whether ``text`` holds two metric lines or more (a run's own log)."""
    return next(itertools.islice(_METRIC_LINE.finditer(text), 1, None), None) is not None


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def split_segments(text: str) -> list[Segment]:
    """The log cut into lines, carriage-return fragments and Ray process parts, ANSI removed."""
    out: list[Segment] = []
    for line in strip_ansi(text).split("\n"):
        for frag in line.split("\r"):
            pos = 0
            source = ""
            for m in _RAY_PREFIX.finditer(frag):
                if m.start() > pos:
                    out.append(Segment(frag[pos:m.start()], source))
                source = m.group(0).strip()
                pos = m.end()
            out.append(Segment(frag[pos:], source))
    return out


def _coerce(value: str) -> Any:
    """A hydra override value: a number, bool, null, a ``[a,b]`` list, or the text itself."""
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        return [_coerce(v.strip().strip("'\"")) for v in inner.split(",")] if inner else []
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    if re.fullmatch(r"[-+]?\d+", value):
        return int(value)
    num = to_number(value)
    return num if num is not None else value


def _overrides(line: str) -> dict[str, Any]:
    """Hydra ``dotted.key=value`` tokens of a command line."""
    try:
        tokens = shlex.split(line, comments=False)
    except ValueError:
        tokens = line.split()
    found = {}
    for token in tokens:
        # Overrides passed to a script as one quoted string are split again.
        parts = token.split()
        if sum(1 for p in parts if _OVERRIDE.fullmatch(p.strip("'\""))) < 2:
            parts = [token]
        for part in parts:
            m = _OVERRIDE.fullmatch(part.strip("'\""))
            if m:
                found[m.group(1)] = _coerce(m.group(2).strip("'\""))
    return found


_SAVED = re.compile(r"[Ss]aving (?:model )?checkpoint to \S*?checkpoint-(\d+)")
_TRAINABLE = re.compile(r"Number of trainable parameters = ([\d,]+)")
#: A Hub model id whose name gives its size ("Qwen/Qwen2.5-7B-Instruct", the cache's
#: "models--Qwen--Qwen3.5-9B"), the size the first number before a B.
_MODEL_ID = re.compile(r"\b[A-Za-z][\w.]*(?:/|--)[\w.-]*?(?<![\w.])(\d+(?:\.\d+)?)[Bb](?![A-Za-z])")


def model_params(text: str) -> float | None:
    """The parameters of the model a log line names by its Hub id (7e9 for
    "Qwen/Qwen2.5-7B-Instruct"), or None."""
    m = _MODEL_ID.search(text)
    return float(m.group(1)) * 1e9 if m else None


def printed_settings(text: str) -> dict[str, Any]:
    """The settings a console capture prints in words (a launch echoed, argparse's
    Namespace, the Trainer's arguments printed whole, ``key=value`` arguments, Hydra
    overrides), without its metrics: what a log beside another log says of their run."""
    return text_config(split_segments(text))


def text_config(segments: Sequence[Segment]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    printed_args = False  # within a printed arguments block
    launched = namespace = False  # a launch's flags, argparse's Namespace, read
    for seg in segments:
        text = seg.text
        if printed_args:
            field = _ARGS_FIELD.match(text) if len(text) <= _MAX_KV_CHARS else None
            if field is not None:
                config.setdefault(field.group(1), _coerce(field.group(2).strip()))
                continue
            printed_args = False
        if "(" in text and _ARGS_OPEN.search(text):
            printed_args = True
            continue
        # The launch a log echoes (``set -x``; OpenRLHF's ``--actor_learning_rate 5e-7``) and
        # argparse's arguments printed whole: the first of each is the run's (a later launch
        # is an evaluation's, or another run's).
        if not launched and "--" in text and (flags := launch_flags(text)):
            launched = True
            for key, value in flags.items():
                config.setdefault(key, value)
        if not namespace and "Namespace(" in text and (args := printed_namespace(text)):
            namespace = True
            for key, value in args.items():
                config.setdefault(key, value)
        if text.count("=") >= 2 and "." in text:
            found = _overrides(text)
            if len(found) >= 2:
                config.update(found)
        if "=" in text:
            evaluation = _EVALUATION.search(text) is not None
            for m in _TRAINER_ARG.finditer(text):
                if evaluation and m.group(1) in _SAMPLING_ARGS:
                    continue  # an evaluation's sampler (greedy, often) is not the rollout's
                config.setdefault(m.group(1), _coerce(m.group(2)))
        # The substring tests keep a huge line from costing a slow regex scan per pattern.
        logging = _LOGGING_STEPS.search(text) if "logging_steps" in text else None
        if logging:
            config.setdefault("logging_steps", int(logging.group(1)))
        total = _TOTAL_STEPS.search(text) if "steps:" in text else None
        if total:
            config.setdefault("total_training_steps", int(total.group(1)))
        if TRAINABLE_PARAMS not in config and "trainable parameters" in text:
            trainable = _TRAINABLE.search(text)
            if trainable:
                config[TRAINABLE_PARAMS] = int(trainable.group(1).replace(",", ""))
        if MODEL_PARAMS not in config and ("/" in text or "--" in text):
            size = model_params(text)
            if size:
                config[MODEL_PARAMS] = size
        if "checkpoint-" in text and "aving" in text:
            # Transformers' "Saving model checkpoint to .../checkpoint-100": what a roll-back
            # can go back to.
            saved = config.setdefault(SAVED_CHECKPOINTS, [])
            for n in map(int, _SAVED.findall(text)):
                if n not in saved:
                    saved.append(n)
    return config
