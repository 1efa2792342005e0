"""``python -m grpo_doctor`` and the ``grpo-doctor`` script: the CLI, with a Ctrl-C that comes
while it is still importing (typer's import, about 0.1 s) said as any other: one line and
exit 130 (it had been a 20-line traceback and status -2; helper-83)."""

from __future__ import annotations

import os
import sys

from grpo_doctor.exit_codes import EXIT_INTERRUPTED


def main() -> None:
    try:
        from grpo_doctor.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("grpo-doctor: interrupted\n")
        sys.stderr.flush()
        # Not sys.exit: a Ctrl-C inside a C extension's start-up (numpy's, under typer's
        # import) leaves CPython marked to re-raise SIGINT at its shutdown (status -2).
        os._exit(EXIT_INTERRUPTED)
    cli_main()


if __name__ == "__main__":
    main()
