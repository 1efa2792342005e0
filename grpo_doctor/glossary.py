"""The words the reports use that a practitioner may not know, in plain words: what
``grpo-doctor explain TERM`` prints when TERM is not a failure mode. Plain data, no imports
beyond the standard library, so that ``explain`` stays fast.

Each entry: the term as reports write it, other spellings it is looked up by, and the meaning.
The canonical metric names (``grpo-doctor metrics`` shows them) are entries too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    meaning: str
    aliases: tuple[str, ...] = ()
    see: tuple[str, ...] = ()  # other entries or failure modes worth reading next


def _t(name: str, meaning: str, *aliases: str, see: tuple[str, ...] = ()) -> Term:
    return Term(name, " ".join(meaning.split()), aliases, see)


TERMS: tuple[Term, ...] = (
    # --- how a finding is dated --------------------------------------------------------------
    _t("onset", """The step where a failure mode began: the start of the episode the finding's
       sentence describes, found by a change-point or trend test on the metric's own curve (not
       the step where it first crossed a threshold, which is usually later).""", "onset step",
       see=("first alert", "episode")),
    _t("first alert", """The first step at which the finding could have been called from the
       log up to that step alone (the log replayed as `watch` reads it): how early a live
       monitor would have warned. It can come before the onset when an earlier episode, one the
       run came back from, raised the finding first: that episode is then an incident of the
       finding, with its own step, and the report shows the alert of the episode the
       sentence describes (JSON ``episode_alert_step``; ``first_alert_step`` stays the
       earliest). Where the earlier episode only receded and the finding was never cleared in
       between, there is no alert of its own to show: the earliest is shown, marked "(an
       earlier episode)" (it dates that episode, not the one the sentence describes); one
       raised again while the episode built up, before the step its sentence dates, is
       marked "(raised as it built up)".""",
       "first alert step",
       "first_alert_step", see=("onset",)),
    _t("episode", """A stretch of steps during which a failure mode was present. A run can have
       several: the finding's onset is where the one its sentence describes began, and an
       earlier one that cleared is an incident ("incident: at step 40, as seen then: ...;
       cleared by step 55").""", "first episode", "episode onset",
       see=("incident", "onset")),
    _t("incident", """A short episode the run recovered from (one spike, a blow-up that
       cleared): reported with its step as evidence, never as the root cause.""", "incidents"),
    _t("root cause", """The finding that explains the others: the earliest one that can cause
       what followed (an lr blow-up before entropy and KL moved), or a setting outside the
       recipe that the chapter links to it. Fix it first; the findings it explains are marked
       "follows from the root cause".""", "root_cause", see=("consequence", "recipe")),
    _t("consequence", """A finding the root cause explains (entropy collapse after a blow-up):
       fixing the cause should clear it, so its remedies come after the cause's.""",
       "follows from the root cause", see=("root cause",)),
    _t("setup problem", """Wrong from the first logged step (completions truncated at the cap,
       NaN, KL high at step 1): a problem of the configuration, not of training dynamics, so
       there is no good checkpoint to roll back to: restart with the setting fixed.""",
       "setup_problem", "from the first step"),
    # --- root causes that are events, not failure modes ("weights_reset (seen as ...)") -----
    _t("weights_reset", """A root cause: the weights trained from a step on were not the run's
       own; its signals (entropy, a reward term) went back to their first levels in one step,
       as a resume that loaded the base model instead of the checkpoint, or a relaunch logging
       into the same run, does. No step size is to blame: check which weights it trained.""",
       "weights reset", see=("seen as",)),
    _t("reward_reweighted", """A root cause: the reward's weights changed at a step (a resume
       or a config with other reward_weights). The reward moved by its definition, not by the
       policy: restore the weights, and judge the run on its terms.""", "reward reweighted",
       see=("seen as",)),
    _t("reward_term_added", """A root cause: a reward term began paying at a step while the
       other terms held their levels. The reward moved by its definition, not by the policy:
       weigh the term so it shapes the task's reward, or remove it.""", "reward term added",
       see=("seen as",)),
    _t("completion_budget_cut", """A root cause: the completion budget was cut at a step (a
       relaunch or a generation setting); every completion was cut at one shorter length from
       there. Restore the budget; the policy did not change there.""", "budget cut",
       see=("seen as",)),
    _t("completion_stop_changed", """A root cause: how completions stop changed at a step (an
       eos_token_id, a stop string or a relaunch); most completions were cut far under the
       budget from there. Restore the stop; the policy did not change there.""",
       "stop changed", see=("seen as",)),
    _t("lr_jump", """A root cause: the logged learning rate jumped at a step (a scheduler
       restarted, or a resumed run's lr set wrongly) and what broke began there. Go back to
       before the jump with the lr the run held until it.""", "learning-rate jump",
       see=("seen as",)),
    _t("scorer_stopped", """A root cause: a reward term's scorer stopped scoring at a step while
       the completions held (a judge or a verifier that went down). The scorer broke, not the
       policy: fix it, then go back to before the step.""", "scorer stopped",
       see=("seen as",)),
    _t("scorer_failing", """A root cause: a reward term's scorer failed on some calls (0 or its
       floor at isolated steps, timeouts, errors). The crashes are those calls; the policy is
       fine.""", "scorer failing", see=("seen as",)),
    _t("scores_missing", """A root cause: from a step the reward fell short of its terms'
       weighted sum, the sum it had equalled: part of a term's scores are missing (a reward
       function returning None, a checker timing out). An unscored completion is paid by the
       other terms only, so its group's advantages are noise. Fix the scorer; the policy did
       not break there.""", "scores missing", "missing scores", see=("seen as",)),
    _t("sampler_changed", """A root cause: at one logged step the completions changed at once
       (many more cut at the length cap, or their length far off its level) and the reward
       fell, after an ordinary update (grad norms at their level, the lr unchanged), which
       cannot move the policy that far: a sampling setting (temperature, top_p/top_k, a
       repetition penalty, a generation config set at a resume) or the prompts changed
       there.""", "sampler changed", see=("seen as",)),
    _t("data_order", """A root cause: the prompts are served in the dataset's own order (sorted
       or concatenated), and the reward fell where each slice began, not where the policy
       broke: shuffle the prompts.""", "data order", see=("seen as",)),
    _t("completion_budget_too_small", """A root cause, a setup problem: most completions
       were cut at the length cap from the first logs, so the task's answers do not fit (an
       answer cut off is never judged right). Raise max_completion_length (or verl's
       response_length) before any overlong shaping, which would drop or penalise most of the
       batch.""", "budget too small", see=("setup problem", "seen as")),
    _t("generation_never_stops", """A root cause, a setup problem: every completion ran to the
       length cap from the first logs though the answers inside them were judged right: the
       stop never comes (the end-of-sequence token the model writes is not the one generation
       stops on). Fix the stop before any budget.""", "never stops",
       see=("setup problem", "seen as")),
    _t("generation_stops_early", """A root cause, a setup problem: every completion ended
       without the end-of-sequence token far under the configured budget, so what stops
       generation is not the budget (a wall-clock max_time, a stop string, a max_new_tokens in
       the generation config); a larger max_completion_length would change nothing.""",
       "stops early", see=("setup problem", "seen as")),
    _t("seen as", """Beside a root cause that is an event or a setup problem rather than a
       failure mode ("weights_reset@161 (seen as entropy_blowup)", "completion_budget_too_small
       (seen as length_hacking)"): the finding that saw it. The finding names the symptom, the
       root cause what caused it; fix that, and the finding should clear.""", "seen by",
       see=("root cause", "setup problem")),
    _t("roll back", """Restart from a saved checkpoint from before the cause (the report names
       a logged step that exists), with the setting fixed.""", "roll-back", "rollback"),
    _t("recipe", """The ranges of each setting in the chapter on GRPO's failure modes that
       grpo-doctor encodes (its section 8): lr from 1e-6 and below 5e-6 (10x for a LoRA
       adapter), beta 0.01-0.05, G 8-64 (16 to start), temperature 1.0-1.2, clip 0.2 low and
       0.28 high, max_grad_norm 1.0, bf16 ...; `grpo-doctor preflight CONFIG` lists every
       knob against it, and a [recipe.KNOB] table overrides a range for your model
       (docs/configuration.md). A setting outside it that the chapter links to the symptom
       is the first action.""", "the recipe", "recipe range",
       see=("root cause",)),
    _t("inconclusive", """Too little to judge: fewer than two checks could run (their metrics
       are not logged) or too few steps were logged. Not a pass: `--strict` fails on it.""",
       see=("healthy",)),
    _t("healthy", """Every check that could run passed, and at least two could (or every check
       chosen with --select did). It means no listed failure mode, with evidence; a run whose
       task reward never moved is not healthy (no_progress, format_gaming).""",
       see=("inconclusive",)),
    _t("no call", """A check that judged the run and neither raised its failure mode nor
       passed it: the evidence points both ways ("reward not improving, but not going
       backwards either"). Listed apart from "passed" so that a pass never contradicts the
       findings; not counted in the status.""", "no_call", "unsettled",
       see=("healthy", "inconclusive")),
    _t("rolling median", """The median of a few neighbouring logged points, taken at each
       point: a curve smoothed without letting one spike move it. A report's "best 1.12 as a
       rolling median" is the best level the curve held, not its single highest point.""",
       "smoothed", "median of the neighbouring points"),
    _t("baseline", """In a finding: the metric's level over the first logged points, that a
       change is measured against ("entropy x3.3 its baseline"). In `audit`: the file of
       accepted findings (`--baseline`), so that only new or worsened ones fail.""",
       "its baseline"),
    _t("threshold", """The level a finding's metric had to pass for the check to fire, as the
       README's failure-mode table states it (override with --set MODE.PARAM=VALUE).""",
       see=("onset",)),
    _t("first sign", """In a root cause that is a setting: the first finding that setting
       explains, and its step (the roll-back goes before it).""", see=("root cause",)),
    _t("catastrophic update", """One optimizer step that broke the run: the reward, entropy
       or log-prob falls off a cliff right after it (often a gradient spike or an lr far too
       high); there is no good checkpoint after it.""", "catastrophic", "blow-up", "blowup",
       see=("roll back", "grad_explosion")),
    _t("reward crash", """The reward falling from its level within a few logged points, not
       a slow drift: reward_overfit when it does not come back.""", "crash", "crashed",
       see=("reward_overfit",)),
    _t("burst", """Several bad steps close together (half of any 10 consecutive steps, say)
       rather than one spike or a sustained level.""", "bursts", see=("incident",)),
    _t("nats", """The unit of entropy and KL with natural logarithms (1 nat = 1.44 bits).
       Token entropy near 0.02 nats means near-deterministic sampling.""", "nat",
       see=("entropy",)),
    # --- GRPO ------------------------------------------------------------------------------
    _t("group", """The G completions sampled for one prompt (TRL num_generations, verl
       rollout.n). GRPO scores each against its group's mean: a group whose rewards are all
       equal teaches nothing.""", "G", "group size", "num_generations",
       see=("zero-std share", "advantage")),
    _t("advantage", """A completion's reward minus its group's mean reward (divided by the
       group's standard deviation in GRPO): what the update pushes up or down. All-equal
       rewards in a group give every completion an advantage of 0; advantage_max and
       advantage_min both 0 while the rewards differ is no gradient at all (a group of one
       sample).""", "advantages", "advantage_mean", "advantage_max", "advantage_min",
       see=("zero-std share",)),
    _t("zero-std share", """The share of groups whose completions all got the same reward
       (standard deviation 0): their advantages are 0 and they give no gradient. Above ~0.5 for
       long, most of the batch is wasted (advantage_collapse).""", "zero-std", "zero std",
       "zero_std_fraction", "zero-std fraction", "frac_reward_zero_std", "equal groups",
       see=("advantage_collapse", "effective group ratio")),
    _t("effective group ratio", """1 minus the zero-std share: the share of groups that still
       carry a learning signal.""", "effective groups", see=("zero-std share",)),
    _t("all_correct_fraction", """Share of groups in which every completion was right: solved
       prompts that teach nothing (make the prompts harder).""", "all correct", "all-correct",
       see=("zero-std share",)),
    _t("all_wrong_fraction", """Share of groups in which every completion was wrong: prompts
       out of reach that teach nothing (make them easier, or a curriculum).""", "all wrong",
       "all-wrong", see=("curriculum",)),
    _t("dynamic sampling", """DAPO's fix for equal groups: drop the groups whose rewards are
       all equal and sample more prompts until the batch is full of groups that teach.""",
       "dynamic_sampling", see=("DAPO", "zero-std share")),
    _t("DAPO", """Decoupled clip and Dynamic sAmpling Policy Optimization (ByteDance, 2025):
       GRPO plus clip-higher, dynamic sampling, token-mean loss and overlong shaping.""",
       see=("clip-higher", "dynamic sampling", "overlong shaping")),
    _t("Dr. GRPO", """GRPO "done right": no division by the group's standard deviation and no
       per-sequence length normalisation, which remove a bias towards long wrong answers.""",
       "Dr GRPO", "drgrpo", see=("token-mean",)),
    _t("GSPO", """Group Sequence Policy Optimization: importance ratios and clipping per
       sequence instead of per token; steadier on long completions and MoE models.""",
       see=("importance ratio",)),
    _t("token-mean", """Loss aggregation that averages over all tokens of the batch (DAPO,
       verl loss_agg_mode token-mean), so long completions are not down-weighted.
       seq-mean-token-mean averages per sequence first.""", "seq-mean", "loss aggregation",
       "loss_agg_mode"),
    _t("curriculum", """Ordering or filtering prompts by difficulty so that groups are neither
       all right nor all wrong (pass rate between ~0.2 and ~0.8).""",
       see=("all_wrong_fraction", "all_correct_fraction")),
    # --- KL and the reference ---------------------------------------------------------------
    _t("kl", """The estimated KL divergence of the policy from the reference model, per token:
       how far training has moved it. GRPO penalises it with the coefficient beta.""",
       "KL", "kl divergence", see=("beta", "kl_drift", "band")),
    _t("beta", """The KL coefficient (TRL beta, verl kl_loss_coef / kl_ctrl.kl_coef): how hard
       the policy is held to the reference. 0 removes the leash.""", "kl_coef",
       "KL coefficient", "kl coefficient", "kl_loss_coef", see=("kl", "leash")),
    _t("leash", """The KL penalty that holds the policy near the reference (beta x KL): raising
       beta tightens it.""", see=("beta",)),
    _t("band", """The range a KL value falls in, with what the chapter says of it: below 0.5
       normal, 0.5-5 drifting (controllable), 5-20 dangerous (likely reward hacking), above 20
       almost certainly collapsed; a finding stops the run at KL above 10.""", "KL band",
       see=("kl_drift",)),
    _t("adaptive KL", """A controller that raises beta when KL is above a target and lowers it
       below (verl kl_ctrl.type adaptive).""", "adaptive_kl", see=("beta",)),
    _t("k3", """The low-variance, always-positive KL estimator (ratio - 1 - log ratio) that
       GRPO implementations log; k1 (log ratio) can be negative.""", "low-variance KL", "k1"),
    _t("reference model", """The frozen copy of the starting policy that KL is measured from;
       updating it (ref sync) resets the KL.""", "reference policy", "reference", "ref model"),
    # --- ratios and clipping --------------------------------------------------------------
    _t("importance ratio", """pi_new / pi_old for a token: how much an update changed its
       probability. PPO-style clipping keeps it within [1 - eps_low, 1 + eps_high].""",
       "ratio", "ratio_max", "ratio_min", "ratio_mean", "PPO ratio",
       see=("clip fraction", "ratio_instability")),
    _t("clip fraction", """Share of tokens whose importance ratio was clipped: a high share
       means the updates are larger than the clip range allows.""", "clip_fraction",
       "clip_fraction_low", "clip_fraction_high", "clipfrac", see=("importance ratio",)),
    _t("epsilon", """The clip range of the importance ratio: ratios are clipped to
       [1 - epsilon, 1 + epsilon_high] (TRL epsilon, verl clip_ratio / clip_ratio_low, OpenRLHF
       eps_clip); the recipe's 0.2 below.""", "clip_ratio", "clip_ratio_low", "eps_clip",
       "cliprange", "clip range", see=("clip-higher", "importance ratio")),
    _t("clip-higher", """DAPO's asymmetric clip: a higher upper bound (eps_high ~0.28) than
       lower (eps_low 0.2), so rare good tokens can grow and entropy does not collapse.""",
       "clip higher", "eps_high", "epsilon_high", "clip_ratio_high", see=("clip fraction",)),
    _t("is_ratio_max", """Train/inference importance ratio: the trainer's probability of a
       sampled token over the rollout engine's (vLLM, SGLang) for the same token. Far from 1
       means the two disagree (precision, kernels, a stale policy); is_ratio_min is the
       smallest. Not the PPO ratio.""", "is_ratio_min", "is ratio", "train-inference ratio",
       see=("mismatch_kl", "TIS")),
    _t("mismatch_kl", """KL between the rollout engine's token probabilities and the trainer's
       for the same tokens: the train/inference mismatch.""", "mismatch", "rollout mismatch",
       see=("is_ratio_max", "TIS")),
    _t("TIS", """Truncated importance sampling: weights each token by the train/inference
       ratio, capped (e.g. at 2), to correct the mismatch (MIS: masked, drops tokens past
       the cap).""", "MIS", see=("is_ratio_max",)),
    # --- gradients, entropy, likelihood ----------------------------------------------------
    _t("grad norm", """The norm of the whole gradient before clipping (TRL grad_norm, verl
       actor/grad_norm): a blow-up shows here first.""", "grad_norm", "gradient norm",
       see=("max_grad_norm", "grad_explosion")),
    _t("max_grad_norm", """The gradient clipping threshold: gradients with a larger norm are
       scaled down to it (recipe 1.0). Pre-clip spikes under active clipping are harmless
       unless something follows them.""", "pre-clip", "clipping", "grad clip",
       see=("grad norm",)),
    _t("entropy", """Mean per-token entropy of the policy's next-token distribution, in nats:
       how much it still explores. It falls slowly as a run learns (sharpening).""",
       see=("sharpening", "entropy_collapse", "entropy_blowup")),
    _t("sharpening", """The slow, healthy fall of entropy as the policy grows confident on what
       it learned, with the reward rising: not a collapse.""", "sharpens", "sharpen",
       see=("entropy",)),
    _t("entropy bonus", """A loss term that rewards entropy (entropy_coef): the chapter's range
       is 0.001-0.01; large values make randomness itself the reward.""", "entropy_coef",
       "entropy coefficient", see=("entropy_blowup",)),
    _t("log_prob_mean", """Mean log-probability the policy gives its own completions (or a
       probe set of good answers). A fall while the reward rises is the lazy likelihood
       displacement.""", "log-prob", "log prob", "logprob", "mean log-prob",
       see=("LLD",)),
    _t("LLD", """Lazy likelihood displacement: the probability of good answers falls while
       the reward still rises (negative-advantage updates push down tokens shared with correct
       answers), until the reward follows it down: the death spiral. LLDS is its remedy, a
       penalty on log-prob decreases of preserved tokens.""", "LLDS",
       "lazy likelihood displacement", "likelihood displacement",
       see=("likelihood_displacement", "log_prob_mean")),
    # --- rewards ---------------------------------------------------------------------------
    _t("reward component", """One reward function's own curve (TRL rewards/NAME/mean): a
       correctness term, a format term, a length term. A gain carried by a format term alone
       is format gaming.""", "reward term", "reward_component", "reward terms",
       see=("format_gaming", "correctness term")),
    _t("correctness term", """The reward component that checks the answer (accuracy,
       correctness_reward_func, check_answer): the task's own reward. A run whose correctness
       term never moved has not learned its task, whatever the total reward did.""",
       "correctness", "correctness reward", see=("reward component",)),
    _t("held-out", """A score on prompts the policy is not trained on (eval accuracy, pass@1 on
       a validation set): the check that a training reward gain is real.""", "held-out score",
       "heldout_score", "heldout", "eval score", see=("reward_hacking",)),
    _t("verifier", """The program that scores a completion (an answer checker, unit tests): a
       lenient one can be gamed.""", "reward model", see=("reward_hacking",)),
    _t("anti-cheat", """A reward term that penalises known exploits (e.g. a no_cheating term):
       its penalties firing mean the policy is trying them.""", "no_cheating", "cheat",
       see=("reward_hacking",)),
    _t("saturate", """A reward term at its maximum on nearly every completion: it no longer
       separates completions in a group, so it teaches nothing more.""", "saturated",
       "saturates"),
    _t("plateau", """A curve that stopped moving after it rose: convergence, not a failure by
       itself.""", "plateaued", "plateaus", "converged"),
    # --- lengths ---------------------------------------------------------------------------
    _t("truncation", """Completions cut at the completion budget (max_completion_length,
       response_length): they end without an answer and usually score 0.""",
       "truncated", "truncation_ratio", "clipped_ratio", "truncated share",
       "max_completion_length", "completion budget", "max_response_length",
       see=("overlong shaping", "length_hacking")),
    _t("overlong shaping", """DAPO's soft penalty for completions near the budget (and not
       training on truncated ones), so length grows only when it pays.""", "overlong",
       "overlong penalty", "overlong filtering", see=("truncation",)),
    _t("response_length_mean", """Mean completion length in tokens (response_length_max: the
       longest).""", "response_length_max", "completion length", "mean length",
       see=("truncation",)),
    # --- precision and setup -----------------------------------------------------------------
    _t("bf16", """bfloat16: 16-bit floats with float32's range; the recipe's training dtype.
       fp16 has a narrow range and needs loss scaling; pure fp16 weights overflow to NaN.""",
       "fp16", "bfloat16", "float16", "dtype", "loss scaling", see=("numerical_failure",)),
    _t("LoRA", """Low-rank adapters: only small added matrices train, which takes about ten
       times the full fine-tune's learning rate.""", "lora adapter"),
    _t("warm-up", """The first steps of a learning-rate schedule, where the lr ramps up to its
       peak: a peak past the recipe's can break a run that was fine before it.""", "warmup",
       "lr schedule"),
    _t("learning_rate", """The optimizer's step size (recipe: start at 1e-6 and stay below 5e-6
       for a full fine-tune, about 10x that for LoRA); the logged value follows the
       schedule.""", "lr", "learning rate"),
    # --- trend statistics ------------------------------------------------------------------
    _t("Mann-Kendall", """A rank test for a monotonic trend that needs no straight line and
       shrugs off outliers; Hamed-Rao corrects its p-value for autocorrelated curves (training
       curves are), so a smooth wander is not called a trend.""", "Hamed-Rao", "Kendall",
       "Kendall tau", "trend test", "significant"),
    _t("Theil-Sen", """The median of the slopes between all pairs of points: a trend's rate,
       robust to spikes.""", "Theil-Sen slope", "slope"),
    _t("change point", """The step where a curve's level or slope changed, found by
       segmenting it: how onsets are dated.""", "change-point", see=("onset",)),
    _t("loss", """The training loss the trainer logged. In GRPO it is not a progress measure
       (it can be ~0 while learning): grpo-doctor reads it only for NaN."""),
    _t("reward_mean", """The mean total reward of the batch's completions (reward_std: its
       spread; group_reward_std: the mean spread within groups; reward_max and reward_min: its
       highest and lowest, equal when every completion of the step scored the same).""",
       "reward", "reward_std", "group_reward_std", "reward_max", "reward_min",
       see=("reward component",)),
    _t("tool_calls", """Tool calls per episode in an agentic run.""", "tool calls",
       see=("tool_spam",)),
    _t("turns", """Turns per episode in a multi-turn run: the tool calls plus the turns every
       episode has (the answer; verl counts the prompt too). tool_spam reads the turns above
       that floor where no call count is logged.""", "num_turns", see=("tool_spam",)),
    _t("tool_failure_rate", """The share of tool calls that failed (an error, an invalid
       call) in an agentic run.""", "tool failures", "failure_frequency",
       see=("tool_failure",)),
)


def _key(text: str) -> str:
    return re.sub(r"[\s_\-./]+", " ", text.strip().lower()).strip()


_INDEX: dict[str, Term] = {}
for _term in TERMS:
    for _name in (_term.name, *_term.aliases):
        _INDEX.setdefault(_key(_name), _term)


def lookup(word: str) -> Term | None:
    """The entry for ``word`` (case, spaces, ``-`` and ``_`` do not matter), or None."""
    return _INDEX.get(_key(word))


def names() -> list[str]:
    return sorted((t.name for t in TERMS), key=str.lower)
