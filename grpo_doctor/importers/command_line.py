"""Settings on a command line: a saved launch script, or the launch a console log echoes
(``set -x``, OpenRLHF's ``ray job submit ... -- python3 -m openrlhf.cli.train_ppo_ray
--actor_learning_rate 5e-7 ...``), and argparse's ``Namespace(...)`` printed whole. Read as
text, never run or evaluated."""
from __future__ import annotations

import ast
import re
import shlex
from typing import Any


def coerce(value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value.strip("'\"")


def set_dotted(config: dict[str, Any], key: str, value: Any) -> None:
    node = config
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


_FLAG = re.compile(r"--?([A-Za-z][\w.-]*)(?:=(.*))?$")
_OVERRIDE = re.compile(r"\+?([A-Za-z_][\w]*(?:\.[\w]+)+)=(.*)$")


def _words(line: str) -> list[str]:
    """A shell line's words, a comment dropped where the shell drops it: an unquoted ``#``
    that begins a word, not one inside a word (ms-swift's ``--dataset NAME#1000``: shlex's
    comments had dropped every flag after it; c77) nor a quoted or escaped one (``"#exp1"``;
    h109). A line whose quotes do not close is split on spaces, its comment dropped all the
    same. A line longer than any launch is split on spaces: shlex's tokenizer had taken 52 s
    on a 2 MB word (h118)."""
    if len(line) > _MAX_SHELL_LINE:
        return line.split()
    # A ${...} with a space in it (${LR:?set LR}) is one word to the shell: kept whole (h119).
    text = _BRACED_SPACE.sub(lambda m: m.group(0).replace(" ", "\x00"), _uncommented(line))
    return [w.replace("\x00", " ") for w in shlex.split(text)]


#: An unquoted parenthesis, marked before the quotes are taken off: an array's ``)`` is the
#: shell's, a quoted one (``--run_name "exp(1)"``) a value's (h120: cut there).
_OPEN, _CLOSE = "\x01", "\x02"


_BRACED_SPACE = re.compile(r"\$\{[^}\s]*\s[^}]*\}")


#: Longer than any launch line (OpenRLHF's longest runs to a few KB).
_MAX_SHELL_LINE = 1 << 16


def _uncommented(line: str) -> str:
    """``line`` up to its shell comment, its unquoted parentheses marked (``_OPEN``,
    ``_CLOSE``)."""
    quote, escaped, start = "", False, True
    out = []
    for ch in line:
        if escaped:
            escaped, start = False, False
            out.append(ch)
            continue
        if ch == "\\" and quote != "'":
            escaped = True
            out.append(ch)
            continue
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and start:
            break
        start = not quote and ch.isspace()
        out.append(ch if quote or ch not in "()" else _OPEN if ch == "(" else _CLOSE)
    return "".join(out)


#: A shell variable set in the script (``LR=1e-6``, ``export LR=1e-6``: ``export`` is its own
#: word); a dotted key is a Hydra override, not a variable.
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
#: ``LR+=x`` (text added) and ``ARGS+=(...)`` (words added; written ``ARGS+= ...``).
_APPEND = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+=(.*)$", re.DOTALL)
#: A one-letter option (``set -x``, ``python3 -m``, ``bash -c``): no training flag is one.
_SHORT_OPTION = re.compile(r"-[A-Za-z]$")
#: ``${NAME}``, ``${NAME:-default}`` (unset or empty), ``${NAME-default}`` (unset only),
#: ``${NAME:?message}``, ``${NAME[@]}`` (an array), ``$NAME``, and a script's positional
#: arguments (``$1``, ``${10}``, ``${1:-1e-6}``, ``$@``, ``${@:2}``).
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:\[[@*]\])?(?:(:?)([-=?+])"
                        r"((?:[^{}]|\$\{[^{}]*\})*))?\}"
                        r"|\$([A-Za-z_][A-Za-z0-9_]*)"
                        r"|\$\{([0-9]+|[@*#])(?:(:?)([-=?+:])([^}]*))?\}|\$([0-9@*#])")


#: A word that is one variable, unquoted in the script (``$ARGS``, ``${ARGS}``).
_WHOLE_REFERENCE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?:\[[@*]\])?\}?")
#: Words a script's variables may split into, in all (a launch passes a few dozen flags).
_MAX_SPLICED = 10_000


#: The longest value a variable expands to: a script's settings are short; a variable built
#: from copies of another (V2=${V1}${V1}...) had grown 16x a line to 15 GB (h117), and one
#: token naming a 4 KB variable 10^6 times asked for 4 GB before the cap applied (h118).
_MAX_EXPANDED = 4096


def _expanded(token: str, shell: dict[str, str]) -> str:
    """``token`` with the script's own variables put in (``$LR``, ``${LR}``, ``${LR:-1e-6}``);
    one the script never set, a positional argument (``$1``: given when the script runs) or a
    command's output (``$(...)``, backquotes) is a value the file does not hold: ``${NAME}``,
    which the config's readers leave not judged."""
    if token.startswith(("$(", "`")):
        return "${computed}"  # (a command's output: known only when the script runs)
    if "$" not in token:
        return token

    def value(m: re.Match[str]) -> str:
        position = m.group(6) or m.group(10)
        if position:
            default = m.group(9) if m.group(8) in ("-", "=") else None
            # (given when the script runs: not judged, its default said; h119)
            return "${argument " + position + (f" or {default}" if default else "") + "}"
        name = m.group(1) or m.group(5)
        colon, op, word = m.group(2), m.group(3), m.group(4)
        current = shell.get(name)
        if op == "+":
            return "${" + name + "}"  # (the alternative value: rare, not judged)
        if current:
            return current
        if op in ("-", "=") and word and (current is None or colon == ":"):
            # ${X-d}: X unset; ${X:-d}: X unset or empty (bash's rule); a default may name
            # another variable (${LR:-${DEFAULT_LR}}); ${X:=d} also sets X (h120).
            word = _expanded(word, shell) if "$" in word and len(word) < _MAX_EXPANDED else word
            if op == "=" and "${" not in word:
                shell[name] = word
            return word
        # Unset, or set empty (an empty default too: bash passes nothing, no trainer runs on
        # it; h118, h119: ${LR:-} had read as TRL's default), or ${X:?message}: not judged.
        return "${" + name + "}"

    pieces: list[str] = []
    size = end = 0
    for m in _REFERENCE.finditer(token):
        for piece in (token[end:m.start()], value(m)):
            pieces.append(piece)
            size += len(piece)
        end = m.end()
        if size > _MAX_EXPANDED:
            return "${too_long}"  # (stopped as it passed the cap, never built whole)
    pieces.append(token[end:])
    out = "".join(pieces)
    return out if len(out) <= _MAX_EXPANDED else "${too_long}"


#: What ends a command within a line (shlex leaves ``1e-5;`` joined, ``&&`` apart).
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
#: Between two lines' words: a command ends there, an array may run on past it.
_LINE_END = "\n"
_ARRAY_START = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=" + _OPEN + "(.*)$", re.DOTALL)
#: Words an array may run to: a launch's arrays hold a few dozen flags.
_MAX_ARRAY_WORDS = 4096


def _array_end(words: list[str], k: int) -> int | None:
    """The index of the word that closes the array opened at ``words[k]`` (the parentheses
    counted: ``$(date)`` inside it is no end), lines apart or not; None when none does."""
    depth = 0
    for j in range(k, min(len(words), k + _MAX_ARRAY_WORDS)):
        depth += words[j].count(_OPEN) - words[j].count(_CLOSE)
        if depth <= 0 and words[j].endswith(_CLOSE):
            return j
    return None


def _commands(words: list[str]) -> list[list[str]]:
    """A script's words as its commands (``LR=1e-2 && python ... $LR``: the assignment is a
    command of its own, not the next one's environment; ``export LR=1e-5; python ...`` had
    read '1e-5;'; h119), a bash array's words joined into one assignment
    (``ARGS=(--beta 0.04 --num_generations 8)``: its last flag had read '8)'), over several
    lines too, and ``ARGS+=(...)`` an assignment that appends (h120: both refused or
    passed over). The parentheses' marks are taken off every word."""
    out: list[list[str]] = [[]]
    k = 0
    while k < len(words):
        word = words[k]
        array = _ARRAY_START.match(word)
        end = _array_end(words, k) if array else None  # (only at an array's start)
        if array and end is not None:
            inner = [array.group(3), *(w for w in words[k + 1:end + 1] if w != _LINE_END)]
            inner[-1] = inner[-1][:-1]
            # (an append's words after a space: the array's words added, not its text's)
            joined = " ".join(w for w in inner if w)
            out[-1].append(_unmarked(f"{array.group(1)}+= {joined}" if array.group(2)
                                     else f"{array.group(1)}={joined}"))
            k = end + 1
            continue
        if word in _SEPARATORS or word == _LINE_END:
            out.append([])
        elif len(word) > 1 and word.endswith(";"):
            out[-1].append(_unmarked(word[:-1]))
            out.append([])
        else:
            out[-1].append(_unmarked(word))
        k += 1
    return [c for c in out if c]


def _unmarked(word: str) -> str:
    return word.replace(_OPEN, "(").replace(_CLOSE, ")")


def parse_command_line(text: str) -> dict[str, Any]:
    """Settings of a saved launch command: ``--flag value``, ``--flag=value``, a bare
    ``--flag`` (true), and Hydra ``a.b.c=value`` overrides; backslash line continuations and
    comments allowed. Dashes in flag names become underscores (OpenRLHF's ``--actor_learning_rate``
    and ``--actor-learning-rate`` alike)."""
    text = re.sub(r"\\\n", " ", text)
    tokens: list[str] = []
    # ``LR=1e-2 python ... $LR``: an assignment before a command on its line is that command's
    # environment only; the line's own $LR is the value from before (h118: read as 0.01).
    prefixed: list[bool] = []
    script: list[str] = []  # the script's words, line ends marked
    for line in text.splitlines():
        try:
            script += _words(line)
        except ValueError:  # quotes that never close
            script += re.split(r"\s+#", line, maxsplit=1)[0].split()
        script.append(_LINE_END)
    for command in _commands(script):
        lead = next((k for k, w in enumerate(command) if not _ASSIGNMENT.match(w)
                     and not _APPEND.match(w)), len(command))
        prefixed += [k < lead < len(command) for k in range(len(command))]
        tokens += command
    config: dict[str, Any] = {}
    shell: dict[str, str] = {}
    spliced = 0
    i = 0
    while i < len(tokens):
        token = _expanded(tokens[i], shell)
        if (_WHOLE_REFERENCE.fullmatch(tokens[i]) and token.startswith("-")
                and any(c.isspace() for c in token) and spliced < _MAX_SPLICED):
            # ``ARGS="--learning_rate 1e-4 --beta 0"; python train.py $ARGS``: the shell
            # splits the variable's value into words, each a flag or its value (h117: the
            # whole value had read as one flag's name).
            try:
                words = shlex.split(token)
            except ValueError:
                words = token.split()
            spliced += len(words)
            tokens[i:i + 1] = words
            prefixed[i:i + 1] = [False] * len(words)
            token = tokens[i]
        appended = _APPEND.match(token)
        if appended:
            # ``ARGS+=(--learning_rate 1e-2)`` adds words to the array (h120: passed over,
            # the framework's default judged in its place); ``LR+=x`` adds to the text.
            name, more = appended.group(1), appended.group(2)
            if not prefixed[i]:
                before = shell.get(name, "")
                shell[name] = (f"{before} {more.strip()}" if more.startswith(" ")
                               else before + more).strip()
            i += 1
            continue
        assigned = _ASSIGNMENT.match(token)
        if assigned:
            # A shell variable the script sets and a later flag reads (Oat's
            # ``--num_samples $ROLLOUT_PER_PROMPT``: "'$ROLLOUT_PER_PROMPT' is not a number"; c79)
            if not prefixed[i]:
                shell[assigned.group(1)] = assigned.group(2)
            if assigned.group(1) == "config":  # EasyR1's ``config=examples/config.yaml``
                config["config"] = assigned.group(2)
            i += 1
            continue
        if _SHORT_OPTION.match(token):
            i += 1  # ``set -x``, ``python3 -m``: the shell's and the interpreter's, no setting
            continue
        override = _OVERRIDE.match(token)
        flag = _FLAG.match(token) if token.startswith("-") else None
        if override:
            set_dotted(config, override.group(1), coerce(override.group(2)))
        elif flag:
            name = flag.group(1).replace("-", "_")
            if flag.group(2) is not None:
                config[name] = coerce(flag.group(2))
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                config[name] = coerce(_expanded(tokens[i + 1], shell))
                i += 1
            else:
                config[name] = True
        i += 1
    return config


#: A line that launches training: an interpreter or launcher, then the flags it passes on.
_LAUNCHER = re.compile(r"(?:^|[\s/'\"])(?:python[\d.]*|torchrun|deepspeed|accelerate|"
                       r"ray job submit|trl|verl)(?=\s)")
#: A launch line's flags: two at least before it counts (``python train.py --help`` is none).
_MIN_FLAGS = 2


def launch_flags(line: str) -> dict[str, Any]:
    """The ``--flag value`` settings of a launch command a console log echoes, or {} for a
    line that is not one (no interpreter or launcher, or fewer than two flags)."""
    if "--" not in line or not _LAUNCHER.search(line):
        return {}
    found = parse_command_line(line)
    flags = {k: v for k, v in found.items() if not isinstance(v, dict)}  # dotted: Hydra's
    return flags if len(flags) >= _MIN_FLAGS else {}


#: Longest ``Namespace(...)`` read (OpenRLHF's holds ~150 arguments in ~8,000 characters).
_MAX_NAMESPACE_CHARS = 200_000


def printed_namespace(line: str) -> dict[str, Any]:
    """The arguments of argparse's ``Namespace(a=1, b='x', ...)`` printed on ``line``, each a
    literal (a value that is not one, such as ``<object at 0x7f>``, is left out); {} when
    there is none."""
    start = line.find("Namespace(")
    if start < 0 or len(line) - start > _MAX_NAMESPACE_CHARS:
        return {}
    out: dict[str, Any] = {}
    for item in _top_level_items(line[start + len("Namespace("):]):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            continue
        try:
            out[key] = ast.literal_eval(value.strip())
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue  # a callable, an object's repr: no setting
    return out


def _top_level_items(text: str) -> list[str]:
    """``a=1, b=(2, 3), c='x, y'`` up to the closing bracket of the call: the items its
    top-level commas separate (brackets and quotes nest)."""
    items: list[str] = []
    depth, quote, begin = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            if depth == 0:
                items.append(text[begin:i])
                return items
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[begin:i])
            begin = i + 1
    return items  # no closing bracket: the line was cut, its items so far
