"""The verifiable toy task: digit-sequence operations with a checkable answer.

A prompt is ``BOS OP x1 .. xk SEP``; the canonical completion is ``ANS y1 .. ym EOS`` where
``y`` is ``x`` copied (OP_COPY), reversed (OP_REV) or the single digit ``sum(x) mod 10``
(OP_SUM). The "base model" is pre-trained on a mixture that also holds a few non-canonical
habits (a FILL-token preamble, THINK tags, a bare answer without ANS, wrong answers) so that
RL can find and amplify them when a reward component pays for them.

True accuracy (what ``eval`` measures) is strict: the completion must end with EOS within the
length budget and the digits between the first ANS and EOS must equal the target exactly.
Anything before the first ANS is free "reasoning" text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIGITS = list(range(10))
BOS, SEP, ANS, EOS, PAD, FILL, THINK, OP_COPY, OP_REV, OP_SUM = range(10, 20)
VOCAB = 20
OPS = {"copy": OP_COPY, "rev": OP_REV, "sum": OP_SUM}
NAMES = {BOS: "<s>", SEP: "=", ANS: "<a>", EOS: "</s>", PAD: "_", FILL: ".", THINK: "<t>",
         OP_COPY: "C", OP_REV: "R", OP_SUM: "S"}


def detok(seq) -> str:
    return " ".join(NAMES.get(int(t), str(int(t))) for t in seq)


def target(op: str, x: list[int]) -> list[int]:
    if op == "copy":
        return list(x)
    if op == "rev":
        return list(reversed(x))
    if op == "sum":
        return [sum(x) % 10]
    raise ValueError(op)


@dataclass(frozen=True)
class Prompt:
    op: str
    x: tuple[int, ...]

    @property
    def tokens(self) -> list[int]:
        return [BOS, OPS[self.op], *self.x, SEP]

    @property
    def answer(self) -> list[int]:
        return target(self.op, list(self.x))


def sample_prompts(rng: np.random.Generator, n: int, ops: list[str], ks: list[int]) -> list[Prompt]:
    out = []
    for _ in range(n):
        op = ops[rng.integers(len(ops))]
        k = ks[rng.integers(len(ks))]
        out.append(Prompt(op, tuple(int(v) for v in rng.integers(0, 10, size=k))))
    return out


def pretrain_completion(rng: np.random.Generator, p: Prompt, habits: dict[str, float]) -> list[int]:
    """One completion of the base model's training mixture (mostly canonical)."""
    ans = p.answer
    u = rng.random()
    c = np.cumsum([habits["fill"], habits["think"], habits["bare"], habits["wrong"]])
    if u < c[0]:
        return [FILL] * int(rng.integers(1, 4)) + [ANS, *ans, EOS]
    if u < c[1]:
        return [THINK] * int(rng.integers(1, 3)) + [ANS, *ans, EOS]
    if u < c[2]:
        return [*ans, EOS]
    if u < c[3]:
        m = int(rng.integers(1, 4))
        return [ANS, *[int(v) for v in rng.integers(0, 10, size=m)], EOS]
    return [ANS, *ans, EOS]


# --- parsing and reward components ----------------------------------------------------------


def parse(comp: list[int]) -> tuple[list[int] | None, bool]:
    """(answer digits between the first ANS and EOS or None, terminated with EOS)."""
    terminated = EOS in comp
    body = comp[: comp.index(EOS)] if terminated else comp
    if ANS not in body:
        return None, terminated
    rest = body[body.index(ANS) + 1:]
    if not rest or any(t > 9 for t in rest):
        return None, terminated
    return rest, terminated


def strict_correct(comp: list[int], ans: list[int]) -> float:
    got, terminated = parse(comp)
    return float(terminated and got == ans)


def strict_format(comp: list[int]) -> float:
    """1 for exactly ``ANS digit+ EOS``, nothing before, nothing after."""
    if len(comp) < 3 or comp[0] != ANS or comp[-1] != EOS:
        return 0.0
    return float(all(t <= 9 for t in comp[1:-1]))


def tag_share(comp: list[int]) -> float:
    """A 'reasoning-tag' format reward: share of the body that sits in THINK tags."""
    body = comp[: comp.index(EOS)] if EOS in comp else comp
    if not body:
        return 0.0
    return sum(t == THINK for t in body) / len(body)


def lenient_correct(comp: list[int], ans: list[int]) -> float:
    """A buggy verifier: the answer's last digit appears anywhere after ANS (or anywhere)."""
    body = comp[: comp.index(EOS)] if EOS in comp else comp
    if ANS in body:
        body = body[body.index(ANS) + 1:]
    return float(ans[-1] in body)


def length_score(comp: list[int], max_len: int) -> float:
    """A length-preferring 'reward model': longer completions score higher (0..1)."""
    return len(comp) / max_len


COMPONENTS = ("correct", "format", "tags", "verifier", "length")


def reward_components(comp: list[int], ans: list[int], max_len: int,
                      weights: dict[str, float]) -> dict[str, float]:
    out = {}
    for name in weights:
        if name == "correct":
            out[name] = strict_correct(comp, ans)
        elif name == "format":
            out[name] = strict_format(comp)
        elif name == "tags":
            out[name] = tag_share(comp)
        elif name == "verifier":
            out[name] = lenient_correct(comp, ans)
        elif name == "length":
            out[name] = length_score(comp, max_len)
        else:
            raise ValueError(name)
    return out
