"""How a run's process ended, read from the text it printed after its last metrics.

A log that ends in a Python traceback, or in the shell's ``Killed`` or an out-of-memory error,
is of a run that stopped there, whatever its curves showed before: a reward function that
raised ``KeyError`` at step 120 of 200 had read HEALTHY, the traceback unsaid. The exception's
last line and the frame that raised it are what a user fixes; ``KeyboardInterrupt`` is a
user's own stop, said as such and nothing to fix.

Pure text reading: no I/O, no knowledge of the metric store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A traceback's opening line (Python's, and Ray's worker tracebacks, which print the same).
TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
#: The exception line closing a traceback: a dotted class name, then its message.
_EXCEPTION = re.compile(
    r"^(?P<name>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Timeout|"
    r"Failure|Killed)\w*(?:\((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*\))?)(?::\s?(?P<message>.*))?$")
#: Terminal colour codes (Ray colours its workers' prefixes).
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: Ends a process without a traceback: the kernel's OOM killer as the shell reports it, a
#: crash of native code, a collective that timed out.
_FATAL = (
    # The shell's own word: "Killed" alone, or bash's job report "line 12:  4242 Killed  cmd"
    # (not a sample's text ending in the word: "The knight was Killed", helper-77).
    (re.compile(r"^\s*Killed\s*$|\s\d+\s+Killed\s"), "killed",
     "the process was killed (the shell's 'Killed': the host's out-of-memory killer?)"),
    (re.compile(r"Segmentation fault"), "error", "a segmentation fault (native code crashed)"),
    (re.compile(r"Watchdog caught collective operation timeout|NCCL.*[Tt]imed? ?out"),
     "error", "a collective operation timed out (NCCL watchdog)"),
    # Slurm's own line when the job's time ran out; torchrun's when a worker was killed.
    (re.compile(r"CANCELLED AT .* DUE TO TIME LIMIT"), "killed",
     "the job hit its time limit (Slurm cancelled it)"),
    (re.compile(r"CANCELLED AT .* DUE TO PREEMPTION"), "killed",
     "the job was preempted (Slurm cancelled it for another job): its time limit of sorts"),
    (re.compile(r"Signal 9 \(SIGKILL\) received|exitcode\s*:\s*-9\b|got signal: 9\b|"
                r"oom-kill event"), "killed",
     "a worker was killed (SIGKILL: the host's out-of-memory killer?)"),
    (re.compile(r"^(?:.*\s)?(?:RuntimeError: )?CUDA error: "), "error",
     "a CUDA error (the GPU failed, or a kernel was given bad input)"),
)
#: Paths of installed code: the frame to fix is the last one outside them.
_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python\d[\d.]*)[/\\]")
#: A Ray worker's prefix on each line it prints (``(TaskRunner pid=123)``), ranks' ``[rank0]:``.
_PREFIX = re.compile(r"^\s*(?:\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\)\s*|\[rank\d+\]:\s*)")
#: Longest exception message kept: a tensor's repr can run for pages.
_MAX_MESSAGE = 160


@dataclass(frozen=True)
class Ending:
    """How the process ended: ``kind`` "error" (an exception or a fatal signal), "killed"
    (the process killed from outside) or "interrupted" (the user's Ctrl-C); ``error`` the
    exception's line (``KeyError: 'answer'``) or what happened; ``where`` the frame that raised
    it ("in correctness_reward, train.py line 120"), None when none is shown."""

    kind: str
    error: str
    where: str | None = None

    @property
    def needs_fix(self) -> bool:
        """Something to fix before resuming (an interrupt is the user's own stop)."""
        return self.kind != "interrupted"

    def words(self) -> str:
        """``KeyError: 'answer' (raised in correctness_reward, train.py line 120)``."""
        return self.error + (f" (raised {self.where})" if self.where else "")


def _clean(line: str) -> str:
    return _PREFIX.sub("", _ANSI.sub("", line.rstrip()))


def _where(frames: list[re.Match[str]]) -> str | None:
    """Where the exception was raised: the innermost frame, named by its function (a
    comprehension's ``<listcomp>`` frame by the function it is in, when that is the user's
    code too)."""
    if not frames:
        return None
    frame = frames[-1]
    if frame["func"].startswith("<") and not _LIBRARY.search(frame["path"]):
        own = [f for f in frames if not _LIBRARY.search(f["path"])
               and not f["func"].startswith("<")]
        frame = own[-1] if own else frame
    where = f"in {frame['func']}, {_file_name(frame)} line {frame['line']}"
    if _LIBRARY.search(frame["path"]):
        # Raised inside a library: the user's own line that called into it, too (a config
        # the trainer refused: "in __post_init__, grpo_config.py", called from the script's line).
        # (A script's top level too: a flat train.py, the usual TRL script, calls from there.)
        own = [f for f in frames if not _LIBRARY.search(f["path"])
               and (not f["func"].startswith("<") or f["func"] == "<module>")
               and not f["path"].startswith("<")]
        if own:
            caller = "" if own[-1]["func"] == "<module>" else f"{own[-1]['func']}, "
            where += f", called from {caller}{_file_name(own[-1])} line {own[-1]['line']}"
    return where


def _file_name(frame: re.Match[str]) -> str:
    return re.split(r"[/\\]", frame["path"])[-1]


#: Exceptions that report another process's failure, not what failed: a launcher's
#: (torchrun's ChildFailedError, accelerate's CalledProcessError) and a rank's collective
#: broken by another rank's death (NCCL's "remote process exited").
_ECHOES = re.compile(r"ChildFailedError|CalledProcessError|DistBackendError|"
                     r"ProcessExitedException|ProcessRaisedException|DistNetworkError")


#: Any exception's line: a dotted class name, then its message, as Python prints it.
_ANY_EXCEPTION = re.compile(
    r"^(?P<name>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::\s?(?P<message>.*))?$")
_CAMEL = re.compile(r"[A-Z][a-z0-9]+[A-Z]")


def _named_exception(text: str) -> re.Match[str] | None:
    """The line after a traceback's frames that names an exception whatever its name ends in
    (Triton's ``OutOfResources``, pyarrow's ``ArrowInvalid``, ``StopIteration``; helper-77:
    read HEALTHY): a dotted name with a message, or a CamelCase name alone."""
    found = _ANY_EXCEPTION.match(text)
    if found is None:
        return None
    last = found["name"].rsplit(".", 1)[-1]
    return found if found["message"] is not None or _CAMEL.search(last) else None


def _traceback_ending(lines: list[str]) -> Ending | None:
    """The exception and frame of the traceback that says what failed: the last one (after
    chained ones: the last is raised), unless it reports another's failure (a launcher's
    ``ChildFailedError`` below the worker's ``KeyError``, rank 0's NCCL error after rank 1's
    out-of-memory error: helper-76), then the earliest that does not."""
    starts = [k for k, line in enumerate(lines) if TRACEBACK.search(line)]
    if not starts:
        return None
    found = [(k, _exception_after(lines, k)) for k in starts]
    last = found[-1][1]
    if last is None or not _ECHOES.search(last.error.split(":", 1)[0]):
        return last
    return next((e for _, e in found if e is not None and not _ECHOES.search(
        e.error.split(":", 1)[0])), last)


def _exception_after(lines: list[str], start: int) -> Ending | None:
    """The exception of the traceback opening at line ``start``, and where it was raised.
    Whatever precedes the header on its line (a launcher's label: srun's ``0: ``, torchrun's
    ``[default0]:``, pdsh's host, OpenMPI's ``[1,0]<stderr>:``) is taken off the lines after
    it that carry it too (helper-77: a crash under such labels read HEALTHY)."""
    header = TRACEBACK.search(lines[start])
    label = lines[start][:header.start()] if header else ""
    frames: list[re.Match[str]] = []
    for line in lines[start + 1:]:
        text = _clean(line[len(label):] if label and line.startswith(label) else line)
        frame = _FRAME.match(text)
        if frame:
            frames.append(frame)
            continue
        if text[:1].isspace() or not text:
            continue  # the frame's source line, its ^^^^ marks
        found = _EXCEPTION.match(text.strip()) or (_named_exception(text.strip()) if frames
                                                   else None)
        if found:
            name = found["name"]
            message = " ".join((found["message"] or "").split())
            if len(message) > _MAX_MESSAGE:
                message = message[:_MAX_MESSAGE - 3].rstrip() + "..."
            error = f"{name}: {message}" if message else name
            short = name.rsplit(".", 1)[-1]
            kind = "interrupted" if short == "KeyboardInterrupt" else "error"
            return Ending(kind, error, _where(frames))
    return None


def ending_in(text: str) -> Ending | None:
    """How the process that printed ``text`` ended (the text after its last metrics: a
    traceback there, or a fatal line); None when nothing says it stopped on an error."""
    lines = [_clean(line) for line in text.replace("\r", "\n").splitlines()]
    found = _traceback_ending(lines)
    if found is not None:
        return found
    for line in reversed(lines[-50:]):
        for pattern, kind, said in _FATAL:
            if pattern.search(line):
                return Ending(kind, said)
    return None
