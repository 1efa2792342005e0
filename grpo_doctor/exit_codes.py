"""The exit codes of every command, in one place (a leaf: the CLI imports it before anything
heavy). An internal error (a bug) is never 1: 1 is a finding."""

from __future__ import annotations

#: Nothing at or above --fail-on.
EXIT_OK = 0
#: A finding at or above --fail-on.
EXIT_FINDINGS = 1
#: A usage or input error (one line on stderr).
EXIT_ERROR = 2
#: A bug in grpo-doctor (the message asks for a report).
EXIT_INTERNAL = 3
#: Ctrl-C.
EXIT_INTERRUPTED = 130
