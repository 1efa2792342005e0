"""Canonical metrics and the alias table that maps the frameworks' metric names onto them.

Sources: ../shared/reference/metric-names.md (read from TRL, verl, OpenRLHF, NeMo-RL, ROLL,
RAGEN, Search-R1 and VerlTool source). The traps it lists are encoded here: a truncation
"clip ratio" is not a PPO clip fraction, train-vs-inference importance ratios are not PPO
ratios, verl's ``agent_loop/tool_calls`` is seconds, NeMo-RL's ``pct_*`` are percentages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from grpo_doctor.lazy import numpy as np


class Metric(str, Enum):
    """A canonical metric: the name rules ask for, whatever the framework called it."""

    REWARD_MEAN = "reward_mean"
    REWARD_STD = "reward_std"
    GROUP_REWARD_STD = "group_reward_std"
    REWARD_MAX = "reward_max"
    REWARD_MIN = "reward_min"
    ENTROPY = "entropy"
    KL = "kl"
    KL_COEF = "kl_coef"
    ENTROPY_COEF = "entropy_coef"
    LOG_PROB_MEAN = "log_prob_mean"
    RATIO_MAX = "ratio_max"
    RATIO_MIN = "ratio_min"
    RATIO_MEAN = "ratio_mean"
    CLIP_FRACTION = "clip_fraction"
    CLIP_FRACTION_LOW = "clip_fraction_low"
    CLIP_FRACTION_HIGH = "clip_fraction_high"
    GRAD_NORM = "grad_norm"
    LEARNING_RATE = "learning_rate"
    LOSS = "loss"
    RESPONSE_LENGTH_MEAN = "response_length_mean"
    RESPONSE_LENGTH_MAX = "response_length_max"
    TRUNCATION_RATIO = "truncation_ratio"
    ZERO_STD_FRACTION = "zero_std_fraction"
    ALL_CORRECT_FRACTION = "all_correct_fraction"
    ALL_WRONG_FRACTION = "all_wrong_fraction"
    ADVANTAGE_MEAN = "advantage_mean"
    ADVANTAGE_MAX = "advantage_max"
    ADVANTAGE_MIN = "advantage_min"
    TOOL_CALLS = "tool_calls"
    TURNS = "turns"
    TOOL_FAILURE_RATE = "tool_failure_rate"
    HELDOUT_SCORE = "heldout_score"
    MISMATCH_KL = "mismatch_kl"
    IS_RATIO_MAX = "is_ratio_max"
    IS_RATIO_MIN = "is_ratio_min"

    def __str__(self) -> str:
        return self.value


#: Reward components are open-ended (one per reward function); they live under this prefix.
REWARD_COMPONENT_PREFIX = "reward_component/"
#: What a reward component can be to the checks: the task's own score, a format term, an
#: anti-cheat penalty, or anything else (``--reward-role ROLE=NAME``, ``[rewards]``).
REWARD_ROLES = ("correctness", "format", "cheat", "other")


def reward_component(name: str) -> str:
    """The canonical column of one reward component, e.g. ``reward_component/format``."""
    return REWARD_COMPONENT_PREFIX + name


def is_reward_component(column: str) -> bool:
    return column.startswith(REWARD_COMPONENT_PREFIX)


# --- unit conversions -------------------------------------------------------------------------

Transform = Callable[["np.ndarray"], "np.ndarray"]  # strings: numpy loads on first use


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _one_minus(x: np.ndarray) -> np.ndarray:
    return 1.0 - x


def _one_minus_percent(x: np.ndarray) -> np.ndarray:
    return 1.0 - x / 100.0


def _percent(x: np.ndarray) -> np.ndarray:
    return x / 100.0


def _negate(x: np.ndarray) -> np.ndarray:
    return -x


@dataclass(frozen=True)
class Alias:
    """One framework key for a canonical metric, with its conversion and, for proxies, a note."""

    key: str
    metric: Metric
    transform: Transform = _identity
    conversion: str | None = None
    proxy: str | None = None


def _aliases(metric: Metric, *keys: str, **kw: object) -> list[Alias]:
    return [Alias(key, metric, **kw) for key in keys]  # type: ignore[arg-type]


# Keys are normalised (see ``normalize_key``): lower case, a leading ``train/`` dropped, spaces
# around ``/`` removed and other spaces turned into ``_``. Order matters: for each canonical
# metric the first alias present wins; the rest stay as unmapped columns.
ALIASES: list[Alias] = [
    *_aliases(
        Metric.REWARD_MEAN,
        "reward", "reward_mean", "rewards/mean", "critic/score/mean", "critic/rewards/mean",
        "rollout/reward_mean", "env/reward_mean", "ppo/mean_scores", "objective/scores",
        "mean_reward", "score/mean", "reward/mean", "score",
        # slime: its rollout/rewards are the group-normalised ones (0 on average under GRPO).
        "rollout/raw_reward",
    ),
    *_aliases(
        Metric.REWARD_STD,
        "reward_std", "rollout/reward_std", "env/reward_std", "ppo/std_scores", "rewards/std",
        "reward/std",
    ),
    # The batch's extremes: verl logs no reward std, and max = min says every sample of the
    # step scored the same.
    *_aliases(
        Metric.REWARD_MAX,
        "critic/score/max", "critic/rewards/max", "reward_max", "rewards/max", "reward/max",
        "score/max", "max_reward", "max_total_reward",
    ),
    *_aliases(
        Metric.REWARD_MIN,
        "critic/score/min", "critic/rewards/min", "reward_min", "rewards/min", "reward/min",
        "score/min", "min_reward", "min_total_reward",
    ),
    *_aliases(
        Metric.GROUP_REWARD_STD,
        "group_reward_std", "group_reward_std_mean", "rollout/in_group_std",
    ),
    *_aliases(
        Metric.ENTROPY,
        "entropy", "actor/entropy", "actor/entropy_loss", "entropy_loss", "critic/entropy/mean",
        # TRL's PPO and RLOO log both: the per-token mean first, not the sum over a response.
        "policy/entropy_avg", "objective/entropy", "ppo/policy/entropy", "entropy_mean",
        # ms-swift logs the mean with its max and min (entropy/max, entropy/min)
        "entropy/mean",
        "policy_entropy", "native_entropy", "rollout/entropy", "token_entropy",
    ),
    Alias("approx_entropy", Metric.ENTROPY, proxy="NeMo-RL approx_entropy: a Monte Carlo "
          "estimate of entropy from sampled tokens"),
    *_aliases(
        Metric.KL,
        "kl", "actor/kl_loss", "actor/reward_kl_penalty", "critic/kl", "kl_loss", "kl_penalty",
        "kl_divergence", "kl_to_ref", "kl_mean", "ppo/mean_non_score_reward_kl",
        # Not TRL PPO's and RLOO's objective/kl: a sum over each response's tokens, which the
        # per-token lines (KL above 10: stop) would read as a blow-up (6.8 at its first step).
    ),
    *_aliases(
        Metric.KL_COEF,
        "kl_coef", "actor/kl_coef", "critic/kl_coeff", "critic/kl_coef",
        "actor/reward_kl_penalty_coeff", "kl_coeff", "beta",
    ),
    *_aliases(
        # TRL 1.16 logs it on every row (an adaptive controller's value as it moves).
        Metric.ENTROPY_COEF,
        "entropy_coef", "entropy_coeff", "actor/entropy_coeff", "actor/entropy_coef",
    ),
    *_aliases(
        Metric.LOG_PROB_MEAN,
        "log_prob_mean", "mean_log_prob", "logprob_mean", "mean_logprob", "rollout/old_log_prob",
        "verl_tool/per_action_logp/mean", "actor/pos_avg_old_log_prob", "token_log_prob_mean",
        "old_log_prob/mean", "log_prob/mean", "logprobs/mean", "rollout/log_probs",
    ),
    Alias("rollout_corr/training_log_ppl", Metric.LOG_PROB_MEAN, _negate,
          proxy="minus verl rollout_corr/training_log_ppl (sequence-averaged -log pi)"),
    Alias("approx_entropy", Metric.LOG_PROB_MEAN, _negate,
          proxy="minus NeMo-RL approx_entropy (equals mean log pi of sampled tokens on-policy)"),
    *_aliases(
        Metric.RATIO_MAX,
        "probs_ratio_max", "actor/ratio_max", "ratio_max", "ppo/policy/ratio_max",
        "importance_ratio_max",
    ),
    *_aliases(
        Metric.RATIO_MIN,
        "probs_ratio_min", "actor/ratio_min", "ratio_min", "ppo/policy/ratio_min",
        "importance_ratio_min",
    ),
    *_aliases(
        Metric.RATIO_MEAN,
        "probs_ratio", "actor/ratio_mean", "ratio_mean", "ratio", "val/ratio", "ppo/policy/ratio",
    ),
    *_aliases(
        Metric.CLIP_FRACTION,
        "clip_ratio/region_mean", "clip_ratio", "actor/pg_clipfrac", "ppo_clip_ratio",
        "actor/ppo_ratio_clipfrac", "actor/clipfrac", "policy/clipfrac_avg",
        "ppo/policy/clipfrac", "clip_fraction", "clipfrac", "pg_clipfrac", "cispo_clip_ratio",
    ),
    *_aliases(
        Metric.CLIP_FRACTION_LOW,
        "clip_ratio/low_mean", "actor/ppo_ratio_low_clipfrac", "clip_fraction_low",
    ),
    *_aliases(
        Metric.CLIP_FRACTION_HIGH,
        "clip_ratio/high_mean", "actor/ppo_ratio_high_clipfrac", "clip_fraction_high",
    ),
    *_aliases(
        Metric.GRAD_NORM,
        "grad_norm", "actor/grad_norm", "actor_grad_norm", "actor_train/grad_norm",
        "policy/grad_norm", "gradient_norm",
    ),
    *_aliases(
        Metric.LEARNING_RATE,
        "learning_rate", "actor/lr", "actor_lr", "lr", "ppo/learning_rate", "optimizer/lr",
        "lr-pg_0",  # slime: the first parameter group's
    ),
    *_aliases(
        Metric.LOSS,
        "loss", "training_loss", "actor/pg_loss", "policy_loss", "actor/total_loss",
        "loss/policy_avg", "ppo/loss/policy", "train_loss", "pg_loss", "actor/loss",
    ),
    *_aliases(
        Metric.RESPONSE_LENGTH_MEAN,
        "completions/mean_length", "completion_length", "response_length/mean",
        "response_length", "rollout/response_length_mean", "mean_gen_tokens_per_sample",
        "token/response_length/mean", "tokens/response_length/mean", "response_length_mean",
        "tokens/responses_len_mean", "completion_length_mean", "mean_response_length",
        "mean_length",  # TRL's completions/mean_length as users shorten it in a pasted table
        "rollout/response_lengths",  # slime
    ),
    *_aliases(
        Metric.RESPONSE_LENGTH_MAX,
        "completions/max_length", "response_length/max", "max_gen_tokens_per_sample",
        "token/response_length/max", "tokens/response_length/max", "response_length_max",
        "completion_length_max", "max_response_length", "max_length",
    ),
    *_aliases(
        Metric.TRUNCATION_RATIO,
        "completions/clipped_ratio", "response_length/clip_ratio", "response_clip_ratio",
        "rollout/truncated_rate", "truncation_rate", "truncation_ratio", "truncated",
        "truncated_ratio", "clipped_ratio", "rollout/truncated",
    ),
    *_aliases(
        Metric.ZERO_STD_FRACTION,
        "frac_reward_zero_std", "zero_std_fraction", "zero_std_group_ratio",
        "zero_std_ratio", "frac_zero_std",
    ),
    *_aliases(
        Metric.ZERO_STD_FRACTION,
        "group/mixed_groups_ratio", "effective_group_ratio", "effective_signal_fraction",
        "mixed_group_ratio", "dynamic_filtering_pass_rate",
        transform=_one_minus, conversion="1 - value (effective group ratio)",
    ),
    Alias("baseline_reward/pct_mixed", Metric.ZERO_STD_FRACTION, _one_minus_percent,
          conversion="1 - value/100 (NeMo-RL percent of mixed groups)"),
    *_aliases(
        Metric.ALL_CORRECT_FRACTION,
        "group/all_correct_groups_ratio", "all_correct_group_ratio", "all_correct_fraction",
    ),
    Alias("baseline_reward/pct_1", Metric.ALL_CORRECT_FRACTION, _percent,
          conversion="value/100 (NeMo-RL percent)"),
    *_aliases(
        Metric.ALL_WRONG_FRACTION,
        "group/all_incorrect_groups_ratio", "all_wrong_group_ratio", "all_wrong_fraction",
        "all_incorrect_group_ratio",
    ),
    Alias("baseline_reward/pct_0", Metric.ALL_WRONG_FRACTION, _percent,
          conversion="value/100 (NeMo-RL percent)"),
    *_aliases(
        Metric.ADVANTAGE_MEAN,
        "critic/advantages/mean", "advantages/mean", "advantage_mean", "ppo/policy/advantages_mean",
    ),
    # The batch's extremes: max = min = 0 while the rewards differ is no gradient at all.
    *_aliases(Metric.ADVANTAGE_MAX, "critic/advantages/max", "advantages/max", "advantage_max"),
    *_aliases(Metric.ADVANTAGE_MIN, "critic/advantages/min", "advantages/min", "advantage_min"),
    *_aliases(
        Metric.TOOL_CALLS,
        "tools/call_frequency", "tool_call_counts/mean", "tool_calls", "tool_calls/mean",
        "tool_call_rate",
    ),
    Alias("env/number_of_valid_search", Metric.TOOL_CALLS,
          proxy="Search-R1's valid searches per sample (a malformed call is not counted)"),
    # Turns are not calls: a turn count is the calls plus the turns every episode has (the
    # final answer, the prompt), so a rise 0.39 -> 2.34 calls reads 1.39 -> 3.34 turns, 2.4x.
    *_aliases(
        Metric.TURNS,
        "avg_turns_per_sample", "env/number_of_actions/mean", "verl_tool/num_turns/mean",
        "num_turns/mean", "turns_per_sample/mean",
    ),
    *_aliases(
        Metric.TOOL_FAILURE_RATE,
        "tools/failure_frequency", "invalid_tool_call_rate", "tool_failure_rate",
    ),
    Alias("verl_tool/tool_call_success/mean", Metric.TOOL_FAILURE_RATE, _one_minus,
          conversion="1 - value (VerlTool's share of calls that succeeded)"),
    *_aliases(
        Metric.HELDOUT_SCORE,
        "validation_accuracy", "validation/accuracy", "val_accuracy", "eval/reward",
        "eval_reward", "heldout_score", "test_score", "val/score", "val/accuracy",
        "true_accuracy", "gold_reward",
    ),
    *_aliases(
        Metric.MISMATCH_KL,
        "vllm_kl", "rollout_corr/kl", "rollout_corr/k3_kl", "gen_kl_error", "rollout_train_kl",
        "mismatch_kl", "train_inference_kl",
    ),
    *_aliases(
        Metric.IS_RATIO_MAX,
        "sampling/importance_sampling_ratio/max", "rollout_corr/rollout_is_max", "is_ratio_max",
    ),
    *_aliases(
        Metric.IS_RATIO_MIN,
        "sampling/importance_sampling_ratio/min", "rollout_corr/rollout_is_min", "is_ratio_min",
    ),
]

# Patterns for keys with a user-defined part. Each returns the canonical column or None.
_HELDOUT_PATTERNS = [
    re.compile(r"^val-core/.+/(acc|score|reward)/mean@\d+$"),
    re.compile(r"^val/test_score/.+$"),
    re.compile(r"^test_score/.+$"),
    re.compile(r"^eval/.*(accuracy|acc|pass@?1|score)$"),
    re.compile(r"^eval_.*(accuracy|acc|pass@?1|score)$"),
    re.compile(r"^validation/(accuracy|pass_k|score)$"),
]
_COMPONENT_PATTERNS = [
    re.compile(r"^rewards/(?P<name>[^/]+)/mean$"),
    re.compile(r"^rewards/(?P<name>(?!.*/std$)[^/]+)$"),
    re.compile(r"^reward/(?P<name>[^/]+)/mean$"),
    re.compile(r"^reward_components?/(?P<name>[^/]+)$"),
    re.compile(r"^reward_(?P<name>[a-z0-9_]+_(?:reward|func|fn))$"),
]

#: Canonical metrics only an RL trainer logs: a log without any (nor a reward term) is a
#: supervised (SFT) one, or a supervised phase before the RL one.
RL_METRICS = frozenset({
    "reward_mean", "reward_std", "kl", "entropy", "zero_std_fraction", "response_length_mean",
    "truncation_ratio", "clip_fraction", "log_prob_mean",
})

#: Step columns, in order of preference (normalised form).
STEP_KEYS = [
    "step", "_step", "global_step", "train/global_step", "trainer/global_step",
    "training/global_step", "system/global_step", "global_steps", "update", "iteration",
    "iter", "current_steps",  # LLaMA-Factory's trainer_log.jsonl
]

#: Columns that name the run a row belongs to, in files holding several runs.
RUN_KEYS = ["run_id", "run", "run_name", "experiment", "exp_name"]

# Keys that look like a metric but are not (traps): never map them.
_NEVER_MAP = {
    "agent_loop/tool_calls/mean", "agent_loop/tool_calls/max", "agent_loop/tool_calls/min",
}

_BY_KEY: dict[str, list[Alias]] = {}
for _alias in ALIASES:
    _BY_KEY.setdefault(_alias.key, []).append(_alias)
_ORDER = {id(a): i for i, a in enumerate(ALIASES)}


def normalize_key(key: str, *, keep_case: bool = False) -> str:
    """Fold a logged key to the form the alias table uses (``keep_case`` for display names).

    >>> normalize_key("train/rewards / format_reward / mean")
    'rewards/format_reward/mean'
    """
    k = key.strip()
    k = re.sub(r"\s*/\s*", "/", k)
    k = re.sub(r"\s+", "_", k)
    low = k.lower()
    for prefix in ("train/", "training/", "train_"):
        if low.startswith(prefix) and low != "training/global_step":
            if low[len(prefix):]:
                k, low = k[len(prefix):], low[len(prefix):]
            break
    return k if keep_case else low


def canonical_names() -> list[str]:
    return [m.value for m in Metric]


def parse_metric(name: str) -> str:
    """A user-facing metric name (``entropy``, ``reward_component/format``) checked and folded."""
    n = name.strip()
    if n in canonical_names() or is_reward_component(n):
        return n
    raise ValueError(
        f"unknown canonical metric {name!r}; known: {', '.join(canonical_names())}, "
        f"or {REWARD_COMPONENT_PREFIX}<name>"
    )


@dataclass(frozen=True)
class ColumnMapping:
    """How a run's raw columns map onto canonical metrics."""

    mapping: dict[str, str]  # canonical -> source column
    transforms: dict[str, Transform]  # canonical -> conversion applied to the source values
    conversions: dict[str, str]  # canonical -> human note on the conversion
    proxies: dict[str, str]  # canonical -> note when the source only stands in for the metric
    unmapped: list[str]  # source columns left under their own names


#: Component-like keys that are the total, not a component.
_TOTAL_NAMES = {"total", "total_reward", "sum", "overall", "combined", "reward", "all"}


class ColumnMap(dict[str, str]):
    """A user's column map (canonical metric -> the log's column). ``optional``: the canonical
    names mapped by a config file, which applies to every log it finds (runs of other
    frameworks lack the column: their entry is left out); a map given on the command line names
    a column this log must have (a typo is an error)."""

    def __init__(self, mapping: Mapping[str, str] = {}, optional: Iterable[str] = ()) -> None:
        super().__init__(mapping)
        self.optional = frozenset(optional)

    def __reduce__(self):  # audit sends it to worker processes
        return (ColumnMap, (dict(self), self.optional))


def map_columns(
    columns: Iterable[str],
    user_map: Mapping[str, str] | None = None,
    counts: Mapping[str, int] | None = None,
) -> ColumnMapping:
    """Map raw column names onto canonical metrics.

    ``user_map`` (canonical -> raw column) wins over the alias table. A raw column is used for
    at most one canonical metric, except NeMo-RL's ``approx_entropy`` which stands in for both
    entropy and (negated) mean log-prob. ``counts`` (values logged per column) picks, among
    pattern-matched held-out columns, the one evaluated most often.
    """
    cols = list(columns)
    mapping: dict[str, str] = {}
    transforms: dict[str, Transform] = {}
    conversions: dict[str, str] = {}
    proxies: dict[str, str] = {}
    used: set[str] = set()

    for canonical, raw in (user_map or {}).items():
        mapping[canonical] = raw
        transforms[canonical] = _identity
        used.add(raw)

    # For each canonical metric, the candidate raw columns ranked by alias order.
    best: dict[str, tuple[int, str, Alias]] = {}
    for col in cols:
        if col in used:
            continue
        norm = normalize_key(col)
        if norm in _NEVER_MAP:
            continue
        for alias in _BY_KEY.get(norm, []):
            rank = _ORDER[id(alias)]
            cur = best.get(alias.metric.value)
            if cur is None or rank < cur[0]:
                best[alias.metric.value] = (rank, col, alias)
    taken: set[str] = set(used)
    for canonical, (_rank, col, alias) in sorted(best.items(), key=lambda kv: kv[1][0]):
        if canonical in mapping:
            continue
        if col in taken and alias.key != "approx_entropy":
            continue
        mapping[canonical] = col
        transforms[canonical] = alias.transform
        if alias.conversion:
            conversions[canonical] = alias.conversion
        if alias.proxy:
            proxies[canonical] = alias.proxy
        taken.add(col)

    heldout = Metric.HELDOUT_SCORE.value
    if heldout not in mapping:
        matches = [c for c in cols if c not in taken
                   and any(p.match(normalize_key(c)) for p in _HELDOUT_PATTERNS)]
        if matches:
            col = max(matches, key=lambda c: (counts or {}).get(c, 0))  # first on ties
            mapping[heldout] = col
            transforms[heldout] = _identity
            taken.add(col)

    for col in cols:
        if col in taken:
            continue
        norm = normalize_key(col)
        if norm in _NEVER_MAP:
            continue
        for pattern in _COMPONENT_PATTERNS:
            m = pattern.match(norm)
            if m:
                name = normalize_key(col, keep_case=True)[m.start("name"):m.end("name")]
                if name.lower() in _TOTAL_NAMES:
                    # The sum of the components: the reward itself when nothing else is.
                    canonical = Metric.REWARD_MEAN.value
                else:
                    canonical = reward_component(name)
                if canonical not in mapping:
                    mapping[canonical] = col
                    transforms[canonical] = _identity
                    taken.add(col)
                break

    unmapped = [c for c in cols if c not in taken]
    return ColumnMapping(mapping, transforms, conversions, proxies, unmapped)


def find_step_column(columns: Iterable[str]) -> str | None:
    """The column that holds the step, by the frameworks' names, or None (use row order)."""
    by_norm: dict[str, str] = {}
    for c in columns:
        by_norm.setdefault(c.strip().lower(), c)
    for key in STEP_KEYS:
        if key in by_norm:
            return by_norm[key]
    return None


def find_run_column(columns: Iterable[str]) -> str | None:
    """The column naming the run of each row, in a file that holds several runs."""
    by_norm = {c.strip().lower(): c for c in columns}
    for key in RUN_KEYS:
        if key in by_norm:
            return by_norm[key]
    return None


def candidate_keys(metric: str) -> list[str]:
    """The framework keys that would map to ``metric`` (for 'skipped' messages)."""
    return [a.key for a in ALIASES if a.metric.value == metric]
