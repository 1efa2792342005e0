"""Console logs: what a trainer printed to the terminal, captured to a file.

Shapes, tried in this order (the first that yields metrics is the run):

1. verl lines ``step:N - key:value - key:value ...`` (ANSI colours and Ray ``(main_task pid=..)``
   prefixes stripped; ``actor/lr(1e-4):0.010`` is 0.010 in units of 1e-4; lines of one step
   merged, the last value wins).
2. Dicts printed by the Hugging Face Trainer / TRL: ``{'loss': 0.1, 'reward': ...}`` anywhere in
   a line, read with ``ast.literal_eval`` (never ``eval``: a log is untrusted input); a cut-off
   dict keeps its complete numeric entries. The step comes from a step key, else from the
   Trainer's progress bar around each log line, else from the closing ``train_runtime``
   summary (a finished run of T steps that printed n dicts logged every T/n), else from a
   stated ``logging_steps``, else the dicts are numbered in order (and a note says so). A
   closing summary ends a run: a log that trained twice holds two runs, and a supervised
   phase (dicts without any RL metric) before the RL one is left out with a note.
3. Pasted progress tables (``Step | Training Loss | reward ...``, markdown tables).
4. Blocks of ``key: value`` lines.

Config is read where the log prints it: hydra overrides on a verl command line
(``actor_rollout_ref.actor.optim.lr=1e-6`` ...), a pretty-printed config dict,
``logging_steps=10``-style trainer arguments, and the Trainer's arguments printed whole
(``print(training_args)``: ``GRPOConfig(`` then one ``key=value,`` per line).
"""

from __future__ import annotations

import ast
import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grpo_doctor.endings import TRACEBACK, Ending, ending_in
from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import (
    HEAD_BYTES,
    file_run_name,
    looks_like_text,
    read_text,
    to_number,
)
from grpo_doctor.importers._records import (
    PROGRESS_KEY,
    Record,
    flatten,
    numeric_record,
    progress_step,
    records_frame,
)
from grpo_doctor.importers._tables import parse_text_tables, table_header, tables_frame
from grpo_doctor.importers.base import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers.console_text import (
    Segment,
    split_segments,
    strip_ansi,
    text_config,
)
from grpo_doctor.importers.incremental import (
    TextPosition,
    pick_run,
    read_lines,
    rows_from_records,
)
from grpo_doctor.live_store import Rows
from grpo_doctor.metrics import RL_METRICS, STEP_KEYS, map_columns
from grpo_doctor.resumed import LAUNCHES, with_resumed
from grpo_doctor.store import SFT_BEFORE, Run, build_run
from grpo_doctor.text import agree, plural

_TEXT_SUFFIXES = {".log", ".txt", ".md", ".out", ".err", ".stdout", ".stderr"}
_NOT_CONSOLE = {".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".ipynb", ".parquet"}
#: How much of a text file the sniffer reads when the head alone is not telling.
_SNIFF_BYTES = 2 << 20
_MAX_DICT_CHARS = 1 << 20  # a printed dict longer than this is not parsed
_MAX_DICT_LINES = 5000  # nor one spread over more lines
_MAX_KV_CHARS = 1000  # a "key: value" line longer than this is not one

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)"
_VERL_STEP = re.compile(r"(?<![\w/])step:\s?(\d+)\s+-\s+(?=[^\s:]+:)")
_VERL_ITEM = re.compile(
    rf"\s*(?P<key>[^\s:][^:]*?)(?:\((?P<scale>{_NUM})\))?:\s*(?P<val>{_NUM})\s*-?\s*",
    re.IGNORECASE,
)
_DICT_START = re.compile(r"\{\s*['\"]")
_QUOTED = r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\""
_BARE_WORD = re.compile(
    rf"({_QUOTED})|(?<![\w.'\"])([-+]?(?:nan|inf(?:inity)?)|true|false|null)(?![\w.'\"])",
    re.IGNORECASE,
)
_JSON_WORDS = {"true": "True", "false": "False", "null": "None"}
_WRAPPED_NUMBER = re.compile(
    rf"\b(?:np|numpy|torch)?\.?(?:float\d*|int\d*|tensor)\(\s*({_NUM})\s*(?:,[^()]*)?\)",
    re.IGNORECASE,
)
_SALVAGE_PAIR = re.compile(
    rf"['\"]([^'\"\n]{{1,200}})['\"]\s*:\s*(['\"]?)({_NUM})\2(?=\s*[,}}])", re.IGNORECASE
)
_PROGRESS = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
_KV_LINE = re.compile(
    rf"^\s*([A-Za-z_][\w.@-]*(?:\s*/\s*[\w.@-]+)*)\s*[:=]\s*({_NUM})\s*,?\s*$", re.IGNORECASE
)
_STEP_WORDS = {k.lower() for k in STEP_KEYS} | {"global_steps"}



#: The note of a log with no step anywhere (no step key, no progress bar, no run's end): its
#: steps are the order of its metric lines, which a live monitor says in its alerts.
LOG_LINE_STEPS = ("no step in the log: steps are log-line numbers (1st logged line = 1), "
                  "not trainer steps")


@dataclass
class ConsoleLog:
    """What a console log holds, before it becomes a ``Run``."""

    kind: str  # "verl", "dict", "table", "kv" or "" when nothing was found
    frame: pd.DataFrame = field(default_factory=pd.DataFrame)
    steps: list[int] | None = None  # None: the frame has its own step column
    explicit: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Runs printed before this one in the same log (a script that trained twice); this is the
    # last, the one a live watch follows.
    earlier: list[ConsoleLog] = field(default_factory=list)
    ending: Ending | None = None  # how an earlier run's process died (a later one followed)


# --- text ---------------------------------------------------------------------------------------


def parse_number(text: str, scale: str | None = None) -> float | None:
    """A printed number (``0.010``, ``nan``, ``-inf``); ``scale`` multiplies it exactly."""
    value = to_number(text)
    if value is None or scale is None or not np.isfinite(value):
        return value
    try:
        return float(Decimal(text.strip()) * Decimal(scale))
    except (InvalidOperation, ValueError):
        return None


# --- verl ---------------------------------------------------------------------------------------


def parse_verl_line(text: str) -> tuple[int, Record] | None:
    """``step:N - key:value - ...`` as (N, {key: value}); None when the text has no such line."""
    m = _VERL_STEP.search(text)
    if m is None:
        return None
    if "(" in text:
        # verl formats each value with pformat: under numpy 2 that is its repr,
        # ``actor/entropy:np.float64(0.0179)``.
        text = text[:m.end()] + _WRAPPED_NUMBER.sub(r"\1", text[m.end():])
    record: Record = {}
    for item in text[m.end():].split(" - "):
        im = _VERL_ITEM.fullmatch(item)
        if im is None:
            continue
        key = im.group("key").strip()
        value = parse_number(im.group("val"), im.group("scale"))
        if value is not None and key.lower() not in _STEP_WORDS:
            record[key] = value
    return int(m.group(1)), record


def _line_records(segments: Sequence[Segment], marker: str,
                  parse: Callable[[str], tuple[int, Record] | None],
                  follow: Callable[[str], Record | None] | None = None,
                  ) -> tuple[list[int], list[Record]]:
    """(steps, records) of the lines ``parse`` reads (those holding ``marker``); several
    lines for one step in a row (a validation line beside its training one) are merged, the
    last value winning. ``follow`` reads a line with no step that belongs to the step
    before it (its items merged into that step's record)."""
    steps: list[int] = []
    records: list[Record] = []
    for seg in segments:
        if marker not in seg.text:
            if follow is not None and records and (more := follow(seg.text)):
                records[-1].update(more)
            continue
        parsed = parse(seg.text)
        if parsed is None or not parsed[1]:
            continue
        step, record = parsed
        if steps and steps[-1] == step:
            records[-1].update(record)
        else:
            steps.append(step)
            records.append(record)
    return steps, records


def _verl_records(segments: Sequence[Segment]) -> tuple[list[int], list[Record]]:
    return _line_records(_verl_unwrapped(segments), "step:", parse_verl_line)


#: The most lines a verl step line is joined from (5,000 characters at 80 columns: 63).
_MAX_VERL_WRAPPED = 200
#: A line that begins as a log line of its own, not a wrapped line's rest.
_LOG_LINE = re.compile(r"\s*(?:\[|\(|\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|"
                       r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b)")


def _verl_unwrapped(segments: Sequence[Segment]) -> Sequence[Segment]:
    """``segments`` with each verl step line a terminal hard-wrapped at a fixed width joined
    back (pasted into an issue: its step's reward, entropy and the rest on the lines after
    the first had been lost, and the log refused; trial 66). The lines after it, up to the
    next step, all as wide as the first of them but the last, none wider than that width."""
    out: list[Segment] | None = None
    i = 0
    while i < len(segments):
        seg = segments[i]
        end = _wrap_end(segments, i) if "step:" in seg.text and _VERL_STEP.search(
            seg.text) else None
        if end is None:
            if out is not None:
                out.append(seg)
            i += 1
            continue
        if out is None:
            out = list(segments[:i])
        out.append(Segment(seg.text + "".join(s.text for s in segments[i + 1:end + 1]
                                              if s.source in ("", seg.source)), seg.source))
        i = end + 1
    return segments if out is None else out


def _wrap_end(segments: Sequence[Segment], start: int) -> int | None:
    """The index of the last line a verl step line at ``start`` was hard-wrapped onto, or
    None when the lines after it are not its wrap.

    A wrap's lines are as wide as the terminal but the last (a copy may trim a space at a
    cut: one column less), and so is the step line itself with the Ray prefix it was printed
    under. A shorter step line, or a line that begins as a log line of its own (a timestamp,
    a level, a bracket), has nothing wrapped after it (helper-88: logger lines of one width
    had been glued on). The empty pieces CRLF line ends leave are passed over."""
    first = segments[start]
    pieces: list[int] = []
    for k in range(start + 1, min(len(segments), start + _MAX_VERL_WRAPPED)):
        seg = segments[k]
        if not seg.text:
            continue
        if seg.source not in ("", first.source) or "step:" in seg.text or _LOG_LINE.match(
                seg.text):
            break
        pieces.append(k)
        if len(pieces) > 1 and len(seg.text) < len(segments[pieces[0]].text) - 1:
            break  # the last, shorter line
    if not pieces:
        return None
    physical = len(first.text) + (len(first.source) + 1 if first.source else 0)
    if len(pieces) == 1:
        # One line after it: only a line that begins an item says it is the step's rest.
        if not segments[pieces[0]].text.lstrip().startswith("-"):
            return None
        width = max(physical, len(segments[pieces[0]].text))
    else:
        width = max(len(segments[k].text) for k in pieces[:-1])
    if width < _MIN_WRAP_WIDTH or not width - 2 <= physical <= width:
        return None
    end = None
    for n, k in enumerate(pieces):
        size = len(segments[k].text)
        if size > width:
            break
        end = k
        if size < width - 1 and n < len(pieces) - 1:
            return None  # a short line before the last: not one wrap
    if end is None:
        return None
    joined = first.text + "".join(segments[k].text for k in pieces if k <= end)
    before, after = parse_verl_line(first.text), parse_verl_line(joined)
    if before is None or after is None or len(after[1]) <= len(before[1]):
        return None
    return end


# --- mlx-lm ---------------------------------------------------------------------------------------

#: mlx-lm's GRPO trainer: "Iter 12: Train loss 0.010, Total rewards mean 0.250, ..., KL 0.001,
#: r1_accuracy_reward_func mean 0.250, ..., Learning Rate 1.000e-05, Peak mem 32.940 GB", and
#: its validation lines "Iter 10: Val loss 0.000, Val total_rewards_mean 0.000, ...".
_ITER_LINE = re.compile(r"^\s*Iter (\d+):\s+(?=\S)")
_ITER_ITEM = re.compile(
    rf"\s*(?P<key>[A-Za-z][^,]*?)\s+(?P<val>{_NUM})[A-Za-z%]*(?:\s+[A-Za-z]+)?\s*")
#: Its names, as TRL logs the same things (the aliases know those).
_ITER_NAMES = {"train loss": "loss", "total rewards mean": "reward",
               "total rewards std": "reward_std", "grouped rewards std": "group_reward_std",
               "kl": "kl", "learning rate": "learning_rate"}


def _items(text: str, sep: str | re.Pattern[str],
           item: re.Pattern[str]) -> Iterator[tuple[str, float]]:
    """The ``key``/``val`` items of ``text`` cut at ``sep`` that ``item`` matches whole, with
    a number for a value."""
    for piece in (text.split(sep) if isinstance(sep, str) else sep.split(text)):
        im = item.fullmatch(piece)
        # (A thousands separator: "Completion length: 1,024"; helper-88.)
        if im is not None and (value := parse_number(im.group("val").replace(",", ""))
                               ) is not None:
            yield im.group("key").strip(), value


def parse_iter_line(text: str) -> tuple[int, Record] | None:
    """``Iter N: Name value, ...`` as (N, {key: value}); a reward function's ``NAME mean``
    as TRL's ``rewards/NAME/mean``, a validation line's keys under ``val/``."""
    m = _ITER_LINE.match(text)
    if m is None:
        return None
    record: Record = {}
    for key, value in _items(text[m.end():], ",", _ITER_ITEM):
        if key.startswith("Val "):
            record[f"val/{key[4:].strip()}"] = value
            continue
        name = _ITER_NAMES.get(key.lower())
        if name is None and key.endswith((" mean", " std")) and " " not in key.rsplit(" ", 1)[0]:
            func, stat = key.rsplit(" ", 1)
            name = f"rewards/{func}/{stat}"
        record[name or key] = value
    return (int(m.group(1)), record) if record else None


def _iter_records(segments: Sequence[Segment]) -> tuple[list[int], list[Record]]:
    return _line_records(segments, "Iter ", parse_iter_line)


# --- lines labelled with their step: cosmos-rl, prime-rl, Megatron --------------------------------

#: A step's line, its metrics as "Key: value" items after the step's label, separated by "|"
#: or ",": cosmos-rl's "Step: 861/4725, Loss: -0.023, Learning rate: 2e-06, Reward: 1.31",
#: prime-rl's "SUCCESS Step 28 | Time: 73.77s | Reward: 0.3887 | Seq. Length: 345.6
#: tokens/sample" and Megatron's (ms-swift, NeMo) "iteration  7/ 2174 | consumed samples: 448
#: | learning rate: 4.99E-05 | loss: -2.4E-06 | reward: 7.6E-01 | grad norm: 0.016 |" (all
#: refused as "no metric lines": trial 66).
_LABELLED_STEP = re.compile(r"(?<![\w/.-])(?:[Ss]tep|STEP|[Ii]teration)\s*:?\s+(\d+)"
                            r"(?:\s*/\s*\d+)?\s*(?P<sep>[|,])")
_LABELLED_ITEM = re.compile(
    rf"\s*(?P<key>[A-Za-z][\w ./()%-]{{0,200}}?)\s*:\s*(?P<val>[-+]?\d{{1,3}}(?:,\d{{3}})+"
    rf"(?:\.\d+)?|{_NUM})(?:\s*[A-Za-z%/]+)*\s*",
    re.IGNORECASE)  # Megatron prints NaN as NAN (helper-88)
#: Between items: a "|", or a "," before the next key (never inside "1,024": helper-88).
_LABELLED_SEP = {"|": re.compile(r"\|"), ",": re.compile(r",\s*(?=[A-Za-z])")}
#: Their names, as TRL logs the same things (the aliases know those).
_LABELLED_NAMES = {"learning rate": "learning_rate", "grad norm": "grad_norm",
                   "completion length": "completion_length", "lm loss": "loss",
                   "seq. length": "seq_length", "kl": "kl", "entropy": "entropy",
                   "reward std": "reward_std",
                   # DeepSpeed-Chat's step 3 (PPO): "epoch: 0|step: 259|ppo_ep: 1|act_loss:
                   # ...|cri_loss: ...|unsuper_loss: ..." and "average reward score: ...".
                   "act_loss": "loss", "cri_loss": "critic_loss", "actor loss": "loss",
                   "critic loss": "critic_loss",
                   "average reward score": "reward", "ema reward score": "ema_reward",
                   "kl distance": "kl", "average kl": "kl", "average length": "completion_length",
                   "average return": "return"}
#: DeepSpeed-Chat prints each step's reward on the line after its losses, a line with no
#: step of its own: "average reward score: -7.8" (after a logger's timestamp in some forks;
#: "| EMA reward score: ..." or " Average return: ... Average kl: ..." after it in others).
_TRAILING_REWARD = re.compile(r"average reward score\s*:", re.IGNORECASE)
_TRAILING_ITEM = re.compile(
    rf"(average reward score|ema reward score|average return|average length|average kl)\s*:"
    rf"\s*({_NUM})", re.IGNORECASE)
#: DeepSpeed-Chat's step counts the prompts of one epoch: "epoch: 1|step: 0|" starts again.
_EPOCH_STEP = re.compile(r"(?<![\w/.-])epoch:\s*(\d+)\s*[|,]\s*step:", re.IGNORECASE)


#: A custom loop's ``Step 10: loss=0.12, mean_reward=0.50`` (a step, a colon, key=value
#: items): refused before (trial 74's JAX loop).
_ASSIGNED_STEP = re.compile(r"(?<![\w/.-])(?:[Ss]tep|STEP|[Ii]ter(?:ation)?)\s+(\d+)"
                            r"(?:\s*/\s*\d+)?\s*:\s*(?=[A-Za-z_][\w/.]*\s*=)")
_ASSIGNED_SEP = re.compile(r",\s*|\s+(?=[A-Za-z_][\w/.]*\s*=)")
_ASSIGNED_ITEM = re.compile(rf"\s*(?P<key>[A-Za-z_][\w/.]*)\s*=\s*(?P<val>{_NUM})\s*")


def parse_labelled_line(text: str) -> tuple[int, Record] | None:
    """A line ``... Step N[/M] | Key: value | ...`` (or ``,``-separated), or ``Step N:
    key=value, ...``, as (N, {key: value}), when one of its keys names a metric the aliases
    know."""
    m = _LABELLED_STEP.search(text)
    if m is None:
        a = _ASSIGNED_STEP.search(text)
        if a is None:
            return None
        assigned = dict(_items(text[a.end():], _ASSIGNED_SEP, _ASSIGNED_ITEM))
        if not assigned or not _names_a_metric(tuple(assigned)):
            return None
        return int(a.group(1)), assigned
    record: Record = {}
    for key, value in _items(text[m.end():], _LABELLED_SEP[m.group("sep")], _LABELLED_ITEM):
        key = re.sub(r"\s+", " ", key)
        name = _LABELLED_NAMES.get(key.lower())
        record[name or (key if "/" in key else key.lower().replace(" ", "_"))] = value
    if not record or not _names_a_metric(tuple(record)):
        return None
    return int(m.group(1)), record


@functools.lru_cache(maxsize=1024)
def _names_a_metric(keys: tuple[str, ...]) -> bool:
    """Whether the aliases know one of ``keys`` (once per set of keys, not once per line:
    100,000 lines had taken 12 s; helper-88)."""
    return bool(map_columns(list(keys)).mapping)


def _labelled_records(segments: Sequence[Segment]) -> tuple[list[int], list[Record]]:
    steps: list[int] = []
    records: list[Record] = []
    for marker in ("tep", "teration", "STEP"):  # "Step", "step", "iteration", "Iteration"
        steps, records = _line_records(segments, marker, _epoch_steps(parse_labelled_line),
                                       follow=_trailing_reward)
        if records:
            break
    return steps, records


def _trailing_reward(text: str) -> Record | None:
    """A step's reward printed on the line after it (DeepSpeed-Chat), as items of its record."""
    if not _TRAILING_REWARD.search(text):
        return None
    record: Record = {}
    for key, value in _TRAILING_ITEM.findall(text):
        number = parse_number(value)
        if number is not None:
            record[_LABELLED_NAMES[re.sub(r"\s+", " ", key).lower()]] = number
    return record or None


def _epoch_steps(parse: Callable[[str], tuple[int, Record] | None]
                 ) -> Callable[[str], tuple[int, Record] | None]:
    """``parse`` with a step that counts within an epoch ("epoch: 1|step: 0|") carried on
    from the epoch before, so that a second epoch is no restart of the run."""
    state = {"epoch": -1, "offset": 0, "last": -1}

    def parsed(text: str) -> tuple[int, Record] | None:
        out = parse(text)
        m = _EPOCH_STEP.search(text)
        if out is None or m is None:
            return out
        epoch, (step, record) = int(m.group(1)), out
        if epoch > state["epoch"] >= 0 and step + state["offset"] <= state["last"]:
            state["offset"] = state["last"] + 1 - step
        state["epoch"] = max(state["epoch"], epoch)
        state["last"] = max(state["last"], step + state["offset"])
        return step + state["offset"], record

    return parsed


# --- NeMo-RL -------------------------------------------------------------------------------------

#: NeMo-RL's GRPO prints each step as a block: "===== Step 12/500 =====", then
#: "📊 Training Results:" with "  • Loss: 0.0123", "  • Avg Reward: 0.4500", ..., and
#: "⏱️  Timing:" with "  • generation: 30.12s (50.0%)"; validation as "▶ Starting validation at
#: step 10..." and "📊 Validation Results:" with "    • Accuracy: 0.5000".
_NEMO_STEP = re.compile(r"^=+\s*Step (\d+)/\d+\s*=+$")
_NEMO_SECTION = re.compile(r"(Training Results|Validation Results|Validation Timing|Timing):$")
_NEMO_BULLET = re.compile(rf"^•\s*(?P<key>[^:]+?):\s*(?P<val>{_NUM})")
_NEMO_VALIDATION_AT = re.compile(r"Starting validation at step (\d+)")
#: Its training names as the aliases know them (NeMo-RL's own logged keys).
_NEMO_NAMES = {"loss": "loss", "avg reward": "reward", "avg total reward": "reward",
               "avg filtered reward": "filtered_reward", "generation kl error": "gen_kl_error",
               "mean generation length": "mean_gen_tokens_per_sample"}
_NEMO_PREFIX = {"Timing": "timing/", "Validation Results": "validation/",
                "Validation Timing": "validation_timing/"}


def _nemo_records(segments: Sequence[Segment]) -> tuple[list[int], list[Record]]:
    by_step: dict[int, Record] = {}
    step: int | None = None
    validation_at: int | None = None
    section = ""
    for seg in segments:
        text = seg.text.strip()
        if m := _NEMO_STEP.match(text):
            step, section, validation_at = int(m.group(1)), "", None
            continue
        if m := _NEMO_VALIDATION_AT.search(text):
            validation_at = int(m.group(1))
            continue
        if m := _NEMO_SECTION.search(text):
            section = m.group(1)
            continue
        m = _NEMO_BULLET.match(text)
        if m is None or not section:
            continue
        at = validation_at if section.startswith("Validation") and validation_at is not None \
            else step
        value = parse_number(m.group("val"))
        if at is None or value is None:
            continue
        key = m.group("key").strip()
        name = (_NEMO_NAMES.get(key.lower(), key.lower().replace(" ", "_"))
                if section == "Training Results" else
                _NEMO_PREFIX[section] + key.lower().replace(" ", "_"))
        by_step.setdefault(at, {})[name] = value
    rows = sorted(by_step.items())
    return [n for n, _ in rows], [r for _, r in rows]


# --- progress-bar postfixes ----------------------------------------------------------------------

#: tqdm's postfix, where a trainer shows its status on the bar (OpenRLHF before mid-2025:
#: "Episode [1/1]:   3%|▎  | 4/128 [05:12<2:41:10, 78.0s/it, policy_loss=0.0123, kl=0.00012,
#: reward=0.45, ...]"): the bar's position is the step.
_BAR_POSTFIX = re.compile(r"^(?P<desc>[^|]*?)\s*\d+%\|[^|]*\|\s*(?P<n>\d+)/\d+\s*\[[^\]]*?,\s*"
                          r"(?P<pairs>[A-Za-z_][\w/]*=[^\]]*)\]")
_MAX_BAR_CHARS = 4000
_POSTFIX_PAIR = re.compile(rf"([A-Za-z_][\w/]*)=({_NUM})(?=\s*(?:,|$))", re.IGNORECASE)


def _postfix_records(segments: Sequence[Segment]) -> tuple[list[int], list[Record]]:
    """The bar whose postfix holds the most metrics the checks read, one record per position
    (the last drawn wins). OpenRLHF draws two: the episode's, a step per rollout batch with
    its status in full, and each PPO epoch's, a position per micro-batch with short names;
    the first is read."""
    bars: dict[str, dict[int, Record]] = {}
    for seg in segments:
        # A bar's line holds "%|" and is short: anything else is not scanned (a megabyte
        # line of digits would make the pattern backtrack).
        if "%|" not in seg.text or len(seg.text) > _MAX_BAR_CHARS:
            continue
        m = _BAR_POSTFIX.search(seg.text.strip())
        if m is None:
            continue
        record: Record = {}
        for key, value in _POSTFIX_PAIR.findall(m.group("pairs")):
            num = parse_number(value)
            if num is not None:
                record[key] = num
        if record:
            desc = re.sub(r"\d+", "#", m.group("desc").strip())  # "Episode [#/#]:"
            bars.setdefault(desc, {})[int(m.group("n"))] = record
    if not bars:
        return [], []
    known = {d: len(map_columns({k for r in rows.values() for k in r}).mapping)
             for d, rows in bars.items()}
    best = max(bars, key=lambda d: (known[d], -len(bars[d])))
    if not known[best]:
        return [], []
    rows = sorted(bars[best].items())
    return [n for n, _ in rows], [r for _, r in rows]


# --- printed dicts ------------------------------------------------------------------------------


def _brace_depth(text: str) -> int:
    """Open brackets minus closed ones, outside quoted strings (a rough balance)."""
    bare = re.sub(_QUOTED, "''", text)
    return sum(bare.count(c) for c in "{[(") - sum(bare.count(c) for c in "}])")


#: What ``_dict_end`` looks at: a whole quoted string (skipped), a quote that opens none (cut
#: off, or a newline inside it), a bracket. By regex, not by character: a long console's
#: dicts had spent a second in a Python loop (helper-77).
_DICT_TOKEN = re.compile(r"""'(?:[^'\\\n]|\\[\s\S])*'|"(?:[^"\\\n]|\\[\s\S])*"|['"]|[{}\[\]()]""")


def _dict_end(text: str) -> int | None:
    """Index just past the ``}`` closing the dict that opens ``text``, or None if cut off."""
    depth = 0
    for m in _DICT_TOKEN.finditer(text):
        token = m.group()
        if len(token) > 1:
            continue  # a quoted string
        if token in "'\"":
            return None  # a string cut off, or broken by a newline
        if token in "{[(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.end()
    return None


def _literal_word(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1)
    word = m.group(2).lower()
    return _JSON_WORDS.get(word) or repr(word)


#: A number as ``literal_dict`` reads it (no leading zeros: Python refuses ``007``), and a
#: printed dict of plain numbers under plain single-quoted keys: read without the parser.
_PLAIN_NUMBER = r"[-+]?(?:(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_PLAIN_ENTRY = rf"'([^'\\\n]*)'\s*:\s*({_PLAIN_NUMBER}|[-+]?(?:nan|inf(?:inity)?))"
_PLAIN_DICT = re.compile(rf"\{{\s*(?:{_PLAIN_ENTRY}\s*,\s*)*{_PLAIN_ENTRY}\s*,?\s*\}}",
                         re.IGNORECASE)
_PLAIN_PAIR = re.compile(_PLAIN_ENTRY, re.IGNORECASE)
_PLAIN_INT = re.compile(r"[-+]?\d+")


def _plain_dict(text: str) -> dict[str, Any] | None:
    """The Trainer's usual row, ``{'loss': 0.1, 'reward': nan, ...}``, read as ``literal_dict``
    reads it (a bare nan or inf as its word) but without ``ast``: a long console's rows had
    spent most of their parse in it. None for any other dict."""
    if not _PLAIN_DICT.fullmatch(text):
        return None
    out: dict[str, Any] = {}
    for key, value in _PLAIN_PAIR.findall(text):
        low = value.lower()
        out[key] = (value.lower() if "n" in low else int(value) if _PLAIN_INT.fullmatch(value)
                    else float(value))
    return out


def literal_dict(text: str) -> dict[Any, Any] | None:
    """A printed dict read safely: bare nan/inf quoted, ``np.float64(x)`` unwrapped, no eval."""
    if len(text) > _MAX_DICT_CHARS:
        return None
    plain = _plain_dict(text)
    if plain is not None:
        return plain
    safe = _WRAPPED_NUMBER.sub(r"\1", text)
    safe = _BARE_WORD.sub(_literal_word, safe)
    try:
        value = ast.literal_eval(safe)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def salvage_pairs(text: str) -> dict[str, str]:
    """The complete ``'key': number`` entries of a dict that is cut off or not a literal."""
    return {m.group(1): m.group(3) for m in _SALVAGE_PAIR.finditer(text)}


@dataclass
class _Printed:
    """A dict found in the log: where it was, what it held, and how it was read."""

    index: int  # segment index where it started
    end: int  # segment index where it ended
    value: dict[Any, Any]
    salvaged: bool = False  # cut off or not a literal: only complete numeric entries kept
    config: bool = False  # a pretty-printed nested dict (already flattened with ".")


#: A line that goes on with a dict: indented like pprint's, a closing bracket, or a quoted key
#: at column 0 (a long dict wrapped by a terminal or an issue's paste).
_CONTINUATION = re.compile(r"^\s+['\"]|^\s*[}\]]|^['\"][^'\"\n]*['\"]\s*:")
_PPRINT_KEY = re.compile(rf"({_QUOTED})\s*:\s*")
_PPRINT_VALUE = re.compile(rf"\{{|{_QUOTED}|\[[^\[\]]*\]|[^,{{}}]+")


#: The narrowest terminal a hard wrap is recognised at: shorter lines are a log's own.
_MIN_WRAP_WIDTH = 60
#: The most lines a hard-wrapped dict is joined from (a long dict at 80 columns: 4,000 chars).
_MAX_WRAPPED_LINES = 50


def _wrapped(segments: Sequence[Segment], start: int, first: str) -> tuple[str, int] | None:
    """A dict a terminal hard-wrapped at a fixed width (pasted from a terminal into an issue):
    its lines all as long as the first but the last, none opening another dict, joined with
    nothing between them (the wrap can fall inside a key or a number: "'k" / "l': 0.0" had
    ended the dict, dropping the reward and its NaN std, trial 62). Returns the dict's text
    and the index of its last line; None when the lines do not close it that way."""
    width = len(segments[start].text)
    if width < _MIN_WRAP_WIDTH:
        return None
    source = segments[start].source
    text = first
    for j in range(start + 1, min(len(segments), start + _MAX_WRAPPED_LINES)):
        line = segments[j].text
        if not line:
            continue  # the empty piece a CRLF line end leaves (helper-84)
        if segments[j].source != source or "{" in line or len(line) > width:
            return None
        text += line
        # (Its end looked for only where a bracket closes: a padded table of one width under
        # an open brace would otherwise scan the joined text again at every line.)
        end = _dict_end(text) if "}" in line else None
        if end is not None:
            return text[:end], j
        if len(line) != width:
            return None
    return None


def _continued(
    segments: Sequence[Segment], start: int, first: str
) -> tuple[list[str], int, bool]:
    """The lines of a dict pretty-printed over several lines by one process.

    Returns the lines, the index of the last one, and whether the brackets closed. Lines of
    other processes in between are passed over; a line of the same process that does not
    continue the dict ends it.
    """
    source = segments[start].source
    lines = [first]
    depth = _brace_depth(first)
    end = start
    size = len(first)
    for j in range(start + 1, min(len(segments), start + _MAX_DICT_LINES)):
        text = segments[j].text
        if segments[j].source != source or not text.strip():
            continue
        if not _CONTINUATION.match(text) or size > _MAX_DICT_CHARS:
            break
        lines.append(text)
        size += len(text)
        end = j
        depth += _brace_depth(text)
        if depth <= 0:
            return lines, end, True
    return lines, end, False


def lenient_config(lines: Sequence[str]) -> dict[str, Any]:
    """Flat dotted keys of a pretty-printed nested dict, read line by line by indentation.

    For dicts that ``literal_eval`` rejects because a captured log lost or mangled a line:
    pprint puts each key of a nested dict in the column after its ``{``, so the column says
    which dict a key belongs to even when a closing bracket went missing.
    """
    out: dict[str, Any] = {}
    stack: list[tuple[int, str]] = []  # (column of the dict's keys, dotted prefix)
    for line in lines:
        pos = 0
        while True:
            m = _PPRINT_KEY.search(line, pos)
            if m is None:
                break
            col = m.start()
            while stack and stack[-1][0] > col:
                stack.pop()
            key = str(_literal(m.group(1)))
            prefix = f"{stack[-1][1]}.{key}" if stack else key
            vm = _PPRINT_VALUE.match(line, m.end())
            if vm is None:
                break
            if vm.group(0) == "{":
                stack.append((vm.end(), prefix))
            else:
                out[prefix] = _literal(vm.group(0).strip())
            pos = vm.end()
    return out


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _nested_start(text: str, start: int) -> bool:
    """Whether a dict opening at ``start`` is the value of a key (inside a larger dict)."""
    return re.search(r"['\"]\s*:\s*$", text[:start]) is not None


#: A printed dict whose opening brace a paste lost: "'loss': -0.0, 'grad_norm': 0.0, ...}"
#: (ms-swift#5571: the thread's line began at its first key; it had read as a CSV, exit 2).
_BARE_DICT = re.compile(r"^\s*(['\"])[\w./@-]+\1\s*:\s*[^,{}]+,\s*['\"].*\}\s*$")


#: A traceback's frame line or its exception's line.
_IN_TRACEBACK = re.compile(r'^\s*File "[^"]+", line \d+|^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*'
                           r"(?:Error|Exception|Warning|Interrupt)\w*: ")
#: A frame's source line as a traceback prints it (indented 4, or 8 under a frame).
_SOURCE_LINE = re.compile(r"^ {4,8}\S")


def _printed_dicts(segments: Sequence[Segment]) -> Iterator[_Printed]:
    i = 0
    while i < len(segments):
        text = segments[i].text
        m = _DICT_START.search(text)
        if m is None and _BARE_DICT.match(text):
            text = "{" + text.lstrip()
            m = _DICT_START.search(text)
        if m is None or _nested_start(text, m.start()) or _IN_TRACEBACK.match(text):
            # (A dict in a traceback's source line or its exception's message is no printed
            # row: "ValueError: reward is NaN in {'reward': nan}" had been step 121, NaN.)
            i += 1
            continue
        # A dict longer than _MAX_DICT_CHARS is not parsed: only that much is scanned.
        body = text[m.start():m.start() + _MAX_DICT_CHARS]
        end = _dict_end(body)
        if end is not None:
            value = literal_dict(body[:end])
            if value is not None:
                yield _Printed(i, i, value)
            else:
                yield _Printed(i, i, salvage_pairs(body[:end]), salvaged=True)
            i += 1
            continue
        wrapped = _wrapped(segments, i, body)
        if wrapped is not None:
            joined, last = wrapped
            value = literal_dict(joined)
            yield (_Printed(i, last, value) if value is not None else
                   _Printed(i, last, salvage_pairs(joined), salvaged=True))
            i = last + 1
            continue
        # A pretty-printed dict breaks its lines after a comma or an opening bracket.
        if body.rstrip()[-1:] not in ",{[(:":
            yield _Printed(i, i, salvage_pairs(body), salvaged=True)
            i += 1
            continue
        lines, last, closed = _continued(segments, i, body)
        value = literal_dict("\n".join(lines)) if closed else None
        if value is not None:
            yield _Printed(i, last, value)
        elif len(lines) > 1:
            yield _Printed(i, last, lenient_config(lines), config=True)
        else:
            yield _Printed(i, i, salvage_pairs(body), salvaged=True)
        i = last + 1


def _config_of(printed: _Printed) -> dict[str, Any] | None:
    """The flat config a printed dict holds, or None when it is not a nested config dict."""
    if printed.config:
        return printed.value
    if any(isinstance(v, dict) for v in printed.value.values()):
        return flatten({str(k): v for k, v in printed.value.items()}, sep=".")
    return None


def _is_metric_dict(keys: Sequence[str]) -> bool:
    """Whether a printed dict is a row of metrics: it logs one grpo-doctor knows other than the
    learning rate, which a script's own print of its settings holds too (``RUN {"learning_rate":
    1e-4, "seed": 1}`` read as a row had shifted every step of a Trainer log without steps)."""
    return _metric_keys(tuple(keys))


@functools.lru_cache(maxsize=256)
def _metric_keys(keys: tuple[str, ...]) -> bool:
    """``_is_metric_dict`` of one key set, once: a Trainer prints the same keys on every row
    (mapping them again per row was half of a long log's parse, helper-77)."""
    if any(k.startswith("eval_") for k in keys):
        return True
    return bool(set(map_columns(list(keys)).mapping) - {"learning_rate"})


#: The keys of a printed dict that name its step: the step columns of any table
#: (LLaMA-Factory's trainer_log "current_steps" pasted with a "..." line had read as line
#: numbers; trial 69).
#: Not "iteration", "iter", "update" or "_step": in a printed dict those count other things
#: (an inner loop, a flag), and had cut a 40-step run to one step (helper-93).
_DICT_STEP_KEYS = ("step", "global_step", "train/global_step", "train/step",
                   "trainer/global_step", "training/global_step", "global_steps",
                   "current_steps")


def _constant_key(found: Sequence[_Printed], key: str) -> bool:
    """Whether ``key`` holds one and the same value in every one of 10 or more dicts whose
    epoch (where logged) moved: no step counter."""
    values = [p.value.get(key) for p in found]
    if len(values) < 10 or any(v is None for v in values) or len({repr(v) for v in values}) > 1:
        return False
    epochs = {repr(p.value.get("epoch")) for p in found}
    return len(epochs) > 1 or all(p.value.get("epoch") is None for p in found)


def _explicit_step(value: dict[Any, Any], keys: Sequence[str] = _DICT_STEP_KEYS) -> int | None:
    for key in keys:
        raw = value.get(key)
        num = None if isinstance(raw, bool) else to_number(raw)
        # (A step is whole: a "global_step" of 1.5, 2.5 had rounded two records into one;
        # h99.)
        if num is not None and np.isfinite(num) and num >= 0 and float(num).is_integer():
            return int(num)
    return progress_step(value.get(PROGRESS_KEY))


#: A step named just before a printed dict on its line: "Global step 12: {", "step=12 {",
#: and slime's "rollout 3: {" (its rollout's metrics; its "step 3: {" the training step's).
_LABELED_STEP = re.compile(
    r"\b(?:global[ _]step|step|rollout)\s*[:=#]?\s*(\d+)\s*[:,\-]?\s*$", re.IGNORECASE)


def _labeled_step(text: str) -> int | None:
    m = _DICT_START.search(text)
    label = _LABELED_STEP.search(text[:m.start()]) if m is not None else None
    return int(label.group(1)) if label else None


def _progress_between(segments: Sequence[Segment], start: int, stop: int
                      ) -> list[tuple[int, int]]:
    out = []
    for seg in segments[start:stop]:
        m = _PROGRESS.search(seg.text)
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
    return out


def _bar_steps(windows: Sequence[list[tuple[int, int]]], pick: int) -> list[int] | None:
    """One step per dict from the progress bars in its window (``pick`` 0: the first bar, -1:
    the last), if every window has a bar of the training total and they never go back.

    The training bar is the one most often drawn nearest a dict (the ``pick`` of each window):
    counting every bar would let start-up bars (model shards, vLLM prompts) outnumber it in
    the first windows, so the first dicts of a log read live would get other steps than the
    finished log gives them."""
    totals = Counter(w[pick][1] for w in windows if w)
    if not totals:
        return None
    total = totals.most_common(1)[0][0]
    steps = []
    for window in windows:
        hits = [n for n, t in window if t == total]
        if not hits:
            return None
        steps.append(hits[pick])
    if any(b < a for a, b in zip(steps, steps[1:])) or steps[0] < 1:
        return None
    return steps


def _progress_steps(segments: Sequence[Segment], found: Sequence[_Printed]) -> list[int] | None:
    """Each dict's step from the training progress bar redrawn right after it, if every one has it.

    The Trainer logs at the end of a step and tqdm redraws the bar (``10/43 [..]``) below the
    printed line; the bar whose total recurs most is the training bar (not eval bars).
    """
    windows = []
    for k, printed in enumerate(found):
        stop = found[k + 1].index if k + 1 < len(found) else len(segments)
        windows.append(_progress_between(segments, printed.end + 1, stop))
    return _bar_steps(windows, 0)


def _progress_before_steps(segments: Sequence[Segment], found: Sequence[_Printed], start: int
                           ) -> list[int] | None:
    """Each dict's step from the last bar drawn before it (tqdm's stderr flushed ahead of a
    buffered stdout), if every dict has one."""
    windows = []
    for k, printed in enumerate(found):
        begin = found[k - 1].end + 1 if k else start
        window = _progress_between(segments, begin, printed.index)
        # A bar drawn on the dict's own line, before it (LLaMA-Factory: "9/860 [00:43<...,
        # 4.60s/it]{'loss': nan, ...}" had read as log-line steps 1, 2; trial 62).
        text = segments[printed.index].text
        m = _PROGRESS.search(text, 0, max(text.find("{"), 0))
        if m:
            window.append((int(m.group(1)), int(m.group(2))))
        windows.append(window)
    steps = _bar_steps(windows, -1)
    if steps is None or len(steps) < 2:
        return steps
    # A dict printed before the bar's next update was flushed repeats the previous step: it
    # is one logging interval later, if that fits before the next dict.
    every = Counter(b - a for a, b in zip(steps, steps[1:]) if b > a).most_common(1)
    for k in range(1, len(steps)):
        if steps[k] <= steps[k - 1]:
            guess = steps[k - 1] + (every[0][0] if every else 1)
            if k + 1 < len(steps) and guess >= steps[k + 1]:
                return None
            steps[k] = guess
    return steps


def _bar_clears(segments: Sequence[Segment], start: int, stop: int
                ) -> list[tuple[int, int, int]]:
    """(segment, bar position, bar total) of each time tqdm cleared its bar: a blank fragment
    (``\\r`` + spaces) right after a bar, before the bar is redrawn at the same position or
    other text is flushed in between. Several blanks in a row (bars cleared together) are one."""
    out = []
    bar: tuple[int, int] | None = None  # the bar last drawn, if nothing came after it
    for i in range(start, stop):
        text = segments[i].text
        if not text:
            continue
        if text.strip():
            m = _PROGRESS.search(text)
            bar = (int(m.group(1)), int(m.group(2))) if m else None
        elif bar is not None:
            out.append((i, *bar))
            bar = None
    return out


def _clear_steps(segments: Sequence[Segment], found: Sequence[_Printed], start: int
                 ) -> list[int] | None:
    """Each dict's step from the bar positions where tqdm cleared the training bar to print a
    line, the k-th clear being the k-th dict's (None unless that holds together).

    The Trainer prints each logged dict with ``tqdm.write``: it clears the bar, writes the
    dict to stdout and redraws the bar at the same position. With stdout buffered (a log
    captured to a file) the dicts reach the file in batches, long after their bars, but the
    clears mark the steps where they were written, in order. Every dict must come after its
    clear, on the training bar (its most frequent total), and training dicts at increasing
    steps. Only clears before a dict count, so the steps of a log's first n dicts are the same
    in any part of it that holds them: the steps a live ``watch`` shows are the finished log's.
    """
    clears = _bar_clears(segments, start, found[-1].index)
    totals = Counter(t for _, _, t in clears)
    if not totals:
        return None
    total = totals.most_common(1)[0][0]
    clears = [c for c in clears if c[2] == total]
    if len(clears) < len(found):
        return None
    steps: list[int] = []
    for (at, step, _), printed in zip(clears, found):
        if at >= printed.index or step < 1 or (steps and step < steps[-1]):
            return None
        if steps and step == steps[-1] and not _is_eval(printed):
            return None  # two training dicts at one step: a clear was not a dict's
        steps.append(step)
    return steps


def _summary_steps(found: Sequence[_Printed], summary: dict[str, Any], bar_total: int | None
                   ) -> tuple[list[int], str] | None:
    """Steps from the Trainer's closing summary: a finished run of T steps that printed n
    training dicts logged every T/n steps (the Trainer logs at steps L, 2L, ...)."""
    runtime = to_number(summary.get("train_runtime"))
    per_second = to_number(summary.get("train_steps_per_second"))
    if not (runtime and per_second and np.isfinite(runtime * per_second)):
        return None
    estimate = runtime * per_second
    total = round(estimate)
    # The rate is printed to 3 decimals: the bar's total, when it agrees, is exact.
    if bar_total and abs(bar_total - estimate) <= max(1.0, 0.02 * estimate):
        total = bar_total
    n = sum(1 for p in found if not _is_eval(p))
    if n == 0 or total < n or total % n or abs(total - estimate) > max(1.0, 0.02 * estimate):
        return None
    every = total // n
    return _ordinal_steps(found, every), (
        f"steps inferred from the run's end: {n} log lines over its {total} steps "
        f"(one every {'step' if every == 1 else f'{every} steps'})")


#: Keys only an evaluation's dict holds, and keys only a training step's does.
_EVAL_MARKS = frozenset({"eval_loss", "eval_runtime"})
_TRAIN_MARKS = frozenset({"loss", "grad_norm", "learning_rate"})


def _as_eval(printed: _Printed) -> _Printed:
    """An evaluation's dict with unprefixed keys beside its eval_ ones (Unsloth's GSPO:
    'eval_loss' with 'completions/mean_length') with each key prefixed: it had been read as a
    training step of its own, its lengths the training's (trial 62)."""
    keys = {str(k) for k in printed.value}
    if not keys & _EVAL_MARKS or keys & _TRAIN_MARKS or _is_eval(printed):
        return printed
    value = {k: v for k, v in printed.value.items() if str(k).startswith("eval_") or k == "epoch"}
    for k, v in printed.value.items():
        # An unprefixed key never overwrites the eval_ one beside it (helper-84: 'reward'
        # had replaced 'eval_reward').
        value.setdefault(f"eval_{k}" if k not in value else k, v)
    return replace(printed, value=value)


def _is_eval(printed: _Printed) -> bool:
    return all(str(k).startswith("eval_") or k == "epoch" for k in printed.value)


def _ordinal_steps(found: Sequence[_Printed], every: int) -> list[int]:
    """Steps ``every, 2*every, ...`` for training dicts; an eval dict shares the last one's step."""
    steps = []
    n = 0
    for printed in found:
        if not _is_eval(printed) or n == 0:
            n += 1
        steps.append(n * every)
    return steps


def _bar_total(segments: Sequence[Segment], start: int, stop: int) -> int | None:
    totals = Counter(t for _, t in _progress_between(segments, start, stop))
    return totals.most_common(1)[0][0] if totals else None


def _dict_steps(
    segments: Sequence[Segment], found: Sequence[_Printed], logging_steps: int | None,
    summary: dict[str, Any], start: int,
) -> tuple[list[int], str | None]:
    # A step key that holds one value across many dicts counts something else (40 dicts all
    # at "step": 1 had merged into one record, "duplicate steps: 0"; h99), and a real one
    # beside it ("global_step") is the step; several dicts a step (a training and an
    # evaluation dict, 8 ranks printing) share theirs.
    keys = [k for k in _DICT_STEP_KEYS if not _constant_key(found, k)]
    explicit = [_explicit_step(p.value, keys) for p in found]
    if all(s is not None for s in explicit):
        return [int(s) for s in explicit if s is not None], None
    labeled = [_labeled_step(segments[p.index].text) for p in found]
    if all(s is not None for s in labeled):
        # "✨ Global step 12: {...}" (OpenRLHF): the line names its step; a progress bar
        # beside it counts prompts, not steps.
        return [int(s) for s in labeled if s is not None], None
    progress = _clear_steps(segments, found, start)
    if progress is not None:
        return progress, "steps read from the training progress bar"
    # The Trainer advances its bar to step N, then prints step N's dict (and tqdm may redraw
    # the bar below it): the last bar before a dict is its step, else the first one after.
    progress = _progress_before_steps(segments, found, start)
    if progress is not None:
        return progress, "steps read from the training progress bar"
    progress = _progress_steps(segments, found)
    if progress is not None:
        return progress, "steps read from the training progress bar"
    inferred = _summary_steps(found, summary, _bar_total(segments, start, found[-1].end + 1))
    if inferred is not None:
        return inferred
    if logging_steps:
        return _ordinal_steps(found, logging_steps), (
            f"no step in the log: steps are log-line numbers times logging_steps={logging_steps}"
        )
    return _ordinal_steps(found, 1), LOG_LINE_STEPS




@dataclass
class _PrintedRun:
    """The metric dicts one training run printed, and its closing summary if it finished."""

    dicts: list[_Printed] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    start: int = 0  # the segment after the previous run's summary
    ending: Ending | None = None  # the error its process died on, when a later run follows

    def is_rl(self) -> bool:
        keys = {str(k) for p in self.dicts for k in p.value}
        # (none of them: a supervised (SFT) phase before the RL one)
        return bool(RL_METRICS & set(map_columns(sorted(keys)).mapping))


def _went_back(before: _Printed, after: _Printed) -> bool:
    """Whether the Trainer's ``epoch`` went back between two printed dicts: a relaunch (from
    an earlier checkpoint, or from the start), not a process that printed a caught
    exception's traceback and went on (reward libraries print them mid-run)."""
    a, b = to_number(before.value.get("epoch")), to_number(after.value.get("epoch"))
    return a is not None and b is not None and b < a


#: Logging intervals the epoch must go back by for a relaunch with no word of how the
#: process before it ended (killed with nothing printed): no interleaving of two printers
#: takes it back that far.
_RELAUNCH_INTERVALS = 3


def _went_far_back(run: _PrintedRun, after: _Printed) -> bool:
    """Whether the epoch went back by ``_RELAUNCH_INTERVALS`` of the run's own intervals:
    a relaunch even where nothing between says the process before it died (a SIGKILL, the
    kernel's OOM killer; helper-76: read as one run of 220 line-numbered steps)."""
    epochs = [e for e in (to_number(p.value.get("epoch")) for p in run.dicts[-20:])
              if e is not None]
    b = to_number(after.value.get("epoch"))
    if len(epochs) < 3 or b is None:
        return False
    steps = [y - x for x, y in zip(epochs, epochs[1:]) if y > x]
    if not steps:
        return False
    every = float(np.median(steps))
    return b < epochs[-1] - _RELAUNCH_INTERVALS * every


def _printed_runs(segments: Sequence[Segment], log: ConsoleLog) -> list[_PrintedRun]:
    """Metric dicts grouped into runs: the Trainer's closing ``train_runtime`` summary ends one
    (a script that trains twice, or an SFT phase before GRPO, prints two)."""
    runs = [_PrintedRun()]
    # Where a process died: a traceback between two metric dicts, the epoch going back after
    # it (a relaunch), ends the run the first belongs to, as a closing summary does (trial 59:
    # a crash at step 120, then a resume from checkpoint-100 appended to the same log, had read
    # as one run of 220 "steps").
    died = [k for k, seg in enumerate(segments) if TRACEBACK.search(seg.text)]
    for printed in map(_as_eval, _printed_dicts(segments)):
        value = printed.value
        keys = [str(k) for k in value]
        config = _config_of(printed)
        if config is not None:
            log.config.update(config)
        elif "train_runtime" in value:
            runs[-1].summary = dict(value)
            runs.append(_PrintedRun(start=printed.end + 1))
        elif _is_metric_dict(keys) and numeric_record(value):
            prev = runs[-1].dicts[-1] if runs[-1].dicts else None
            last = prev.end if prev is not None else None
            # (The epoch first: it goes back at a relaunch only, where a run may print many
            # caught tracebacks.)
            if prev is not None and last is not None and _went_back(prev, printed) and (any(
                    last < k < printed.index for k in died) or _went_far_back(runs[-1], printed)):
                runs[-1].ending = ending_in("\n".join(
                    seg.text for seg in segments[last + 1:printed.index]))
                runs.append(_PrintedRun(start=last + 1))
            runs[-1].dicts.append(printed)
    return [r for r in runs if r.dicts]


def _run_log(segments: Sequence[Segment], run: _PrintedRun, config: dict[str, Any],
             source: str) -> ConsoleLog:
    log = ConsoleLog(kind="dict", config=dict(config),
                     summary=numeric_record(run.summary), ending=run.ending)
    found = run.dicts
    steps, note = _dict_steps(segments, found, _logging_steps(config), run.summary, run.start)
    drop = (*_DICT_STEP_KEYS, PROGRESS_KEY)
    records = [numeric_record({str(k): v for k, v in p.value.items()}, drop) for p in found]
    merged_steps, merged = _merge_same_step(steps, records)
    log.frame, log.explicit = records_frame(merged, source)
    log.steps = merged_steps
    if note:
        log.notes.append(note)
    salvaged = sum(p.salvaged for p in found)
    if salvaged:
        log.notes.append(
            f"{plural(salvaged, 'printed dict')} {agree(salvaged, 'was', 'were')} cut off or "
            f"not plain literals: only {agree(salvaged, 'its', 'their')} complete numeric "
            "entries were read"
        )
    return log


def _dict_log(segments: Sequence[Segment], log: ConsoleLog, source: str = "") -> ConsoleLog:
    runs = _printed_runs(segments, log)
    if not runs:
        return log
    rl = [r for r in runs if r.is_rl()]
    left_out = sum(len(r.dicts) for r in runs if r not in rl) if rl else 0
    logs = [_run_log(segments, r, log.config, source) for r in (rl or runs)]
    if left_out:
        log.config[SFT_BEFORE] = True
        logs[0].notes.append(f"{plural(left_out, 'log line')} of an earlier training "
                             "without RL metrics (supervised fine-tuning?) "
                             f"{agree(left_out, 'was', 'were')} left out")
    last = logs[-1]
    log.kind, log.frame, log.explicit, log.steps = last.kind, last.frame, last.explicit, last.steps
    log.summary.update(last.summary)
    log.notes.extend(last.notes)
    log.earlier = logs[:-1]
    return log


def _merge_same_step(steps: list[int], records: list[Record]) -> tuple[list[int], list[Record]]:
    """Consecutive records at one step (a train and an eval line) become one row."""
    out_steps: list[int] = []
    out: list[Record] = []
    for step, record in zip(steps, records):
        if out_steps and out_steps[-1] == step:
            out[-1].update(record)
        else:
            out_steps.append(step)
            out.append(dict(record))
    return out_steps, out


def _logging_steps(config: dict[str, Any]) -> int | None:
    value = to_number(config.get("logging_steps"))
    if value is not None and np.isfinite(value) and value >= 1 and value == int(value):
        return int(value)
    return None


# --- key: value blocks --------------------------------------------------------------------------


def _kv_line(text: str) -> re.Match[str] | None:
    """A ``key: value`` line; a line too long to be one is not matched (nor scanned slowly)."""
    return _KV_LINE.match(text) if len(text) <= _MAX_KV_CHARS else None


def _kv_records(segments: Sequence[Segment]) -> list[Record]:
    """Runs of ``key: value`` lines; a key seen again starts the next record."""
    records: list[Record] = []
    current: Record = {}
    for seg in segments:
        m = _kv_line(seg.text)
        if m is None:
            continue
        key = re.sub(r"\s*/\s*", "/", m.group(1))
        if key in current:
            records.append(current)
            current = {}
        value = parse_number(m.group(2))
        if value is not None:
            current[key] = value
    if current:
        records.append(current)
    keys = list(dict.fromkeys(k for r in records for k in r))
    return records if keys and map_columns(keys).mapping else []


#: A line of wandb's closing summary: "wandb:   critic/score/mean 0" (the key right-aligned,
#: the value its last word: a run name "Qwen 7B" is no number and is left out).
_WANDB_SUMMARY_LINE = re.compile(r"^wandb:\s+(\S.*?)\s+(\S+)$")
_WANDB_SUMMARY_START = "wandb: Run summary:"


#: The note of a run read from wandb's closing "Run summary" alone (``summary_only``).
WANDB_SUMMARY_NOTE = "read from wandb's closing 'Run summary'"


def summary_only(run: Run) -> bool:
    """A run read from wandb's closing "Run summary" alone: one point, each metric's last
    value, at the run's last step (or at 1 when it names none): no history, so nothing in
    it says when anything began."""
    return any(note.startswith(WANDB_SUMMARY_NOTE) for note in run.notes)


def _wandb_summary(segments: Sequence[Segment]) -> tuple[list[int], Record] | None:
    """wandb's closing "Run summary" block as one record (each metric's last value), at the
    step it names (its ``_step`` or a global step), else 1; None when the text has none, or
    none of its keys is a metric. A paste of it alone is often all a thread holds (Tool-N1#9:
    critic/score/mean 0 and critic/advantages/mean 0, the reward never wired; trial 69)."""
    # The last summary that holds a metric: a log holding two (a resumed launch's) ends with
    # the run's own.
    for start in [k for k in range(len(segments) - 1, -1, -1)
                  if segments[k].text.strip() == _WANDB_SUMMARY_START]:
        read = _summary_at(segments, start)
        if read is not None:
            return read
    return None


def _summary_at(segments: Sequence[Segment], start: int) -> tuple[list[int], Record] | None:
    """The summary block that begins at segment ``start``, as ``_wandb_summary`` reads it."""
    record: Record = {}
    for seg in segments[start + 1:]:
        line = seg.text.strip()
        if not line:
            continue  # (a CRLF capture's empty segments)
        m = _WANDB_SUMMARY_LINE.match(line)
        if m is None:
            break
        value = parse_number(m.group(2))
        if value is not None:
            record[m.group(1)] = value
    keys = (*_DICT_STEP_KEYS, "_step")  # (the trainer's step before W&B's own counter)
    step = next((record[k] for k in keys if k in record), None)
    for k in keys:
        record.pop(k, None)
    if not record or not map_columns(list(record)).mapping:
        return None
    return [round(step) if step is not None and math.isfinite(step) and step >= 0 else 1], record


# --- the whole log ------------------------------------------------------------------------------


#: Printed dicts few enough that step-labelled lines beside them may be the run.
_FEW_DICTS = 5


def parse_console(text: str, source: str = "") -> ConsoleLog:
    """Everything a console log holds; ``kind`` is empty when it has no metrics. ``source``
    names the log in errors."""
    segments = split_segments(text)
    log = ConsoleLog(kind="", config=text_config(segments))
    steps, records = _verl_records(segments)
    if records:
        for printed in _printed_dicts(segments):
            config = _config_of(printed)
            if config is not None:
                log.config.update(config)
        log.kind = "verl"
        log.frame, log.explicit = records_frame(records, source)
        log.steps = steps
        return log
    steps, records = _nemo_records(segments)
    if len(records) >= 2:
        log.kind = "nemo-rl"
        log.frame, log.explicit = records_frame(records, source)
        log.steps = steps
        return log
    steps, records = _iter_records(segments)
    if len(records) >= 2 or (records and not _has_metric_dict("\n".join(
            seg.text for seg in segments[:200]))):
        log.kind = "mlx"
        log.frame, log.explicit = records_frame(records, source)
        log.steps = steps
        return log
    _dict_log(segments, log, source)
    labelled: tuple[list[int], list[Record]] = ([], [])
    if not log.kind or len(log.frame) < _FEW_DICTS:
        # A few dicts (an evaluation's, a printed config) beside many step-labelled lines:
        # the lines are the run (one dict had hidden 100 of them; helper-88).
        labelled = _labelled_records(segments)
    if log.kind and len(labelled[1]) <= len(log.frame):
        return log
    steps, records = labelled
    if records:
        # (What the dicts said of their steps is not said of these lines.)
        log.notes = [n for n in log.notes if not n.startswith(_LINE_STEP_NOTES)]
        log.earlier = []
        log.kind = "labelled"
        log.frame, log.explicit = records_frame(records, source)
        log.steps = steps
        return log
    steps, records = _postfix_records(segments)
    if len(records) >= 2:
        log.kind = "bar"
        log.frame, log.explicit = records_frame(records, source)
        log.steps = steps
        log.notes.append("steps read from the training progress bar, its postfix the metrics")
        return log
    tables = parse_text_tables([s.text for s in segments])
    if tables:
        log.kind = "table"
        log.frame = tables_frame(tables)
        return log
    # (Key: value blocks are the run's history, before a closing summary of it; helper-97.)
    records = _kv_records(segments)
    if records:
        log.kind = "kv"
        log.frame, log.explicit = records_frame(records, source)
        if "step" not in log.frame.columns:
            log.steps = list(range(1, len(records) + 1))
            log.notes.append("no step in the log: steps are the order of the key: value blocks")
        return log
    summary = _wandb_summary(segments)
    if summary is not None:
        log.kind = "wandb-summary"
        log.steps, record = summary
        log.frame, log.explicit = records_frame([record], source)
        log.notes.append(f"{WANDB_SUMMARY_NOTE}: one value per metric, the run's last; its "
                         "history is in the run's wandb/run-*/ folder, or grpo-doctor fetch "
                         "ENTITY/PROJECT/RUN")
    return log


def _sniff_text(path: Path, head: bytes) -> str:
    text = head.decode("utf-8", errors="replace")
    if path.suffix.lower() in _TEXT_SUFFIXES and len(head) >= HEAD_BYTES:
        try:
            with path.open("rb") as fh:
                text = fh.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
        except OSError:
            pass
    return strip_ansi(text)


# Under a framework's prefix too: slime prints {'train/loss': ...} and {'rollout/raw_reward':
# ...} (they had been read as a CSV of text, exit 2: trial 50).
_SNIFF_KEY = re.compile(
    r"['\"](?:(?:train|rollout|actor)/)?(?:loss|reward|raw_reward|grad_norm|learning_rate|kl"
    r"|objective/kl|objective/scores)['\"]\s*:")


def _has_metric_dict(text: str) -> bool:
    """A printed dict holding one of the Trainer's metric keys (a ``{`` before the key, or a
    line that is a dict with its ``{`` lost)."""
    for k, m in enumerate(_SNIFF_KEY.finditer(text)):
        if k >= 10_000:
            return False
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text.rfind("{", max(line_start, m.start() - 4000), m.start()) != -1:
            return True
        line_end = text.find("\n", m.start())
        if _BARE_DICT.match(text[line_start:line_end if line_end != -1 else len(text)]):
            return True
    return False


def _has_verl_metrics(line: str) -> bool:
    parsed = parse_verl_line(line)
    return parsed is not None and bool(parsed[1])


def _sniff(path: Path, head: bytes) -> int:
    suffix = path.suffix.lower()
    if path.is_dir() or suffix in _NOT_CONSOLE or not looks_like_text(head):
        return 0
    text = _sniff_text(path, head)
    bonus = 5 if suffix in _TEXT_SUFFIXES else 0
    if _VERL_STEP.search(text) and (any(
        _has_verl_metrics(line) for line in text.splitlines() if "step:" in line
    ) or any(_has_verl_metrics(seg.text) for seg in _verl_unwrapped(split_segments(text))
             if "step:" in seg.text)):
        return 85 + bonus
    if _has_metric_dict(text):
        return 80 + bonus
    if any(_ITER_LINE.match(line) and parse_iter_line(line) for line in text.splitlines()):
        return 75 + bonus
    if any(parse_labelled_line(line) for line in text.splitlines()
           if _LABELLED_STEP.search(line) or _ASSIGNED_STEP.search(line)):
        return 72 + bonus
    if _postfix_records(split_segments(text[:_SNIFF_BYTES]))[1]:
        return 70 + bonus
    if "Training Results:" in text and len(_nemo_records(split_segments(text))[1]) >= 2:
        return 80 + bonus
    lines = text.splitlines()
    if any(table_header(line) for line in lines):
        return 65 + bonus
    if sum(1 for line in lines if _kv_line(line)) >= 3:
        return 25 + bonus
    if _WANDB_SUMMARY_START in text and _wandb_summary(split_segments(text)) is not None:
        return 20 + bonus
    return 0


def _load(path: Path, options: LoadOptions) -> list[Run]:
    text = read_text(path)
    log = parse_console(text, str(path))
    if not log.kind:
        raise FormatError(
            f"{path}: no metric lines found (expected verl 'step:N - key:value' lines, "
            "printed {'loss': ...} dicts or a Step | ... table)"
        )
    runs = _runs_of(log, text, path, options)
    after = _after_the_end_note(text)
    if after is not None:
        runs[-1].notes.append(after)
    if len(runs) == 1 and runs[0].restarts:
        runs[0].notes.extend(_crashes_before_restarts(text))
    return _launches_joined(runs, path, options)


def _runs_of(log: ConsoleLog, text: str, path: Path, options: LoadOptions) -> list[Run]:
    """The runs of a parsed log (each launch a relaunch began, ``NAME#k``), each with how its
    process ended."""
    logs = [*log.earlier, log]
    if len(logs) == 1:
        runs = [log_to_run(log, path, "console", options)]
    else:
        runs = [log_to_run(part, path, "console", options, name=f"{path.stem}#{k}")
                for k, part in enumerate(logs, 1)]
        for run, part in zip(runs, logs):
            run.ending = part.ending  # a crash a relaunch followed (the last: below)
    runs[-1].ending = ending_after_metrics(text)
    return runs


def _crashes_before_restarts(text: str) -> list[str]:
    """For a log whose steps went back (a resume writing over old steps, as verl's logs read
    one), the errors its earlier processes died on: a traceback with metric lines after it
    (helper-77: "the step went backwards", the KeyError before it unsaid)."""
    lines = text.splitlines()
    metric = [k for k, line in enumerate(lines) if _is_metric_line(strip_ansi(line))]
    out = []
    for k, line in enumerate(lines):
        if not TRACEBACK.search(line):
            continue
        i = bisect.bisect_right(metric, k)
        if i == len(metric):
            continue  # the log's own ending, said as its stop
        after = metric[i]
        ending = ending_in("\n".join(lines[k:after]))
        if ending is not None and ending.needs_fix and ending.kind == "error":
            out.append(f"a process stopped on an error before the steps went back (a resume?): "
                       f"{ending.words()}")
    return out[:3]


def _launches_joined(runs: list[Run], path: Path, options: LoadOptions) -> list[Run]:
    """The runs of one console log with the launches of one resumed run joined (a resume
    appended to the log the crashed run wrote); as they are when ``--run`` names one."""
    if len(runs) < 2 or options.run is not None:
        return runs
    return with_resumed([_global_steps(run, runs[0]) for run in runs],
                        [run.name for run in runs], LAUNCHES["console"],
                        file_run_name(path), str(path))


def _global_steps(run: Run, first: Run) -> Run:
    """A later launch's rows at the global steps its epochs say, where its steps are the
    log's line numbers (printed dicts carry no step) and it goes on from a checkpoint: the
    first launch's epochs per step give them (TRL's 0.002 an epoch a step: a resume from
    checkpoint-100 logs epoch 0.202 on its first line, step 101, not 1). ``run`` as it was
    otherwise: a launch starting over (epoch back at the first launch's start) is another
    run."""
    if run is first or run.step_source == "step" or "epoch" not in run.frame.columns or (
            "epoch" not in first.frame.columns):
        return run
    s0, e0 = first.finite_series("epoch")
    s1, e1 = run.finite_series("epoch")
    if len(e0) < 3 or len(e1) < 3 or not np.all(s0 > 0):
        return run
    rate = float(np.median(e0 / s0))  # epochs a step
    if rate <= 0 or e1[0] < e0[0] + rate / 2:
        return run
    offset = np.round(e1 / rate) - s1
    # One offset for every row (within rounding): the line numbers and the epochs agree.
    shift = float(np.median(offset))
    if shift <= 0 or np.mean(np.abs(offset - shift) <= 1) < 0.9:
        return run
    frame = run.frame.copy()
    frame.index = (frame.index + int(shift)).rename("step")
    nan_steps = {k: v + int(shift) for k, v in run.nan_steps.items()}
    notes = [n for n in run.notes if not n.startswith(_LINE_STEP_NOTES)]
    notes.append(f"{run.name}: steps from its epochs ({rate:g} an epoch a step, as the first "
                 "launch logged them)")
    return replace(run, frame=frame, nan_steps=nan_steps, notes=notes, _finite={},
                   _derived={})


#: Notes of steps numbered by log lines: not said of a launch whose epochs gave its steps.
_LINE_STEP_NOTES = ("steps inferred from the run's end", "no step in the log")


#: Bytes scanned back from the end for the last metric line and what follows it.
_ENDING_BYTES = 2_000_000


def _is_metric_line(line: str) -> bool:
    if _IN_TRACEBACK.match(line) or _SOURCE_LINE.match(line):
        return False  # a traceback's source line or exception holding "'reward':"
    return "train_runtime" in line or bool(_SNIFF_KEY.search(line)) or bool(
        _VERL_STEP.search(line)) or bool(_ITER_LINE.match(line)) or bool(
        _LABELLED_STEP.search(line) and parse_labelled_line(line))


def ending_after_metrics(text: str) -> Ending | None:
    """How the process ended, from what it printed after its last metric line (a traceback,
    ``Killed``); None when metrics or the Trainer's closing summary come last."""
    # Bounded by bytes only: a recursion traceback, or warnings after it, runs to thousands of
    # lines (helper-77: a 3,445-line one had been cut and the crash unsaid).
    ending, finished = _after_last_metrics(text)
    return None if finished else ending


def _after_last_metrics(text: str) -> tuple[Ending | None, bool]:
    """How the process ended after its last metric line, and whether that line was the
    Trainer's closing summary (training finished)."""
    # Bounded by bytes only: a recursion traceback, or warnings after it, runs to thousands of
    # lines (helper-77: a 3,445-line one had been cut and the crash unsaid).
    lines = text[-_ENDING_BYTES:].splitlines()
    last = max((k for k, line in enumerate(lines) if _is_metric_line(strip_ansi(line))),
               default=-1)
    finished = last >= 0 and "train_runtime" in lines[last]
    return ending_in("\n".join(lines[last + 1:])), finished


def _after_the_end_note(text: str) -> str | None:
    """A note when training finished (its closing summary printed) and the process then
    stopped on an error: saving the model, pushing it (helper-77: "No space left on device"
    after the summary read HEALTHY, not a word)."""
    ending, finished = _after_last_metrics(text)
    if not finished or ending is None or not ending.needs_fix:
        return None
    return (f"training finished, then the process stopped on an error: {ending.words()}: "
            "the final save (or push) may be missing")


def log_to_run(log: ConsoleLog, path: Path, format: str, options: LoadOptions,
               name: str | None = None) -> Run:
    """A parsed console log (or a notebook's text output) as a ``Run``."""
    steps = None if options.step_column else log.steps
    return build_run(
        log.frame, name=name or file_run_name(path), source=str(path), format=format,
        steps=steps,
        step_column=options.step_column, column_map=options.column_map,
        explicit_nan=log.explicit, config=log.config, notes=log.notes, summary=log.summary,
    )


# --- a growing log, read from where the last read stopped (``watch``) -----------------------------


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing console log resumes, and whether a verl line was read: only
    then are new verl lines rows; other shapes are parsed whole (``_load_read``), since a
    printed dict's step can depend on what is printed after it."""

    at: TextPosition = field(default_factory=TextPosition)
    verl: bool = False


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    state = state or _Tail()
    text, at = read_lines(path, state.at, final)
    if text is None:
        return Delta(Rows(), _Tail(at, state.verl))
    steps, records = _verl_records(split_segments(text))
    rows = rows_from_records(records, steps=steps)
    return Delta(rows, _Tail(at, state.verl or bool(records)), structural=not state.verl)


def _load_read(path: Path, state: _Tail | None, options: LoadOptions) -> Run | None:
    if state is None or state.at.offset == 0:
        return None
    with path.open("rb") as fh:
        data = fh.read(state.at.offset)
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\x00", "")
    log = parse_console(text)
    if not log.kind:
        return None
    runs = _runs_of(log, text, path, options)
    if len(runs) == 1:
        return runs[0]
    # A relaunch into the same log is another run, named as diagnose names it: watching the
    # last alone had the second run "clear" the first one's NaN (trial 42).
    return pick_run(_launches_joined(runs, path, options), options, str(path))


IMPORTER = Importer(
    name="console",
    sniff=_sniff,
    load=_load,
    incremental=Incremental(read=_read_new, load=_load_read, policy="update"),
)
