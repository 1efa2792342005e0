"""The README fits on a few screens and leads to every page of docs/; every relative link in
them leads somewhere; the quick start is what .ci/run runs; every command has its example."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
PAGES = sorted(DOCS.glob("*.md"))

FENCE = re.compile(r"^(```|~~~)")
#: [text](target) outside code spans; images too. Targets with a scheme are not checked.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks, code spans blanked (a ``[x](y)`` in code
    is not a link)."""
    lines, fenced = [], False
    for line in path.read_text().splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "``", line))
    return lines


def _links(path: Path) -> list[str]:
    return [m.group(1) for line in _prose(path) for m in LINK.finditer(line)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    fenced = False
    for line in path.read_text().splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6} (.+)", line)
        if m and not fenced:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _local_targets(path: Path) -> list[tuple[str, Path, str]]:
    """(link, file it leads to, anchor or '') for each relative link in ``path``."""
    out = []
    for link in _links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https:, mailto: ...
            continue
        target, _, anchor = link.partition("#")
        out.append((link, (path.parent / target).resolve() if target else path, anchor))
    return out


def test_the_readme_is_at_most_300_lines():
    n = len(README.read_text().splitlines())
    assert n <= 300, f"README.md has {n} lines; move the detail to docs/"


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings_that_exist(path: Path):
    broken = []
    for link, target, anchor in _local_targets(path):
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.name}")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


def test_every_docs_page_is_linked_from_the_readme_or_its_index():
    assert PAGES and INDEX in PAGES
    from_readme = {t for _, t, _ in _local_targets(README)}
    from_index = {t for _, t, _ in _local_targets(INDEX)}
    assert INDEX in from_readme, "the README links the docs index"
    unlinked = [p.name for p in PAGES if p not in from_readme | from_index]
    assert not unlinked, f"docs pages no one links to: {unlinked}"
    missing = [p.name for p in PAGES if p != INDEX and p not in from_index]
    assert not missing, f"pages the docs index leaves out: {missing}"


def test_every_docs_page_starts_with_a_title_and_the_task_it_answers():
    for page in PAGES:
        if page == INDEX:
            continue
        lines = page.read_text().splitlines()
        assert lines[0].startswith("# "), page.name
        first = next(line for line in lines[1:] if line.strip())
        assert first.startswith(("You have", "You want", "You ran", "You are", "Your ")), (
            f"{page.name} opens with {first!r}, not the reader's task")


def _quick_start() -> list[str]:
    """The quick start's two commands, as the README shows them."""
    text = README.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    return [block.strip() for block in blocks[:2]]


def _ci_commands() -> list[list[str]]:
    """.ci/run's commands as argument lists (pip's --quiet left out)."""
    commands = []
    for line in (ROOT / ".ci" / "run").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            words = shlex.split(line.split(" #", 1)[0])
            commands.append([w for w in words if w != "--quiet"])
    return commands


def test_the_quick_start_is_two_commands_that_ci_runs():
    install_and_demo, tests = _quick_start()
    assert install_and_demo == "pip install . && grpo-doctor demo"
    assert "\n" not in tests and tests.startswith('pip install ".[test]" && python -m pytest')
    ci = _ci_commands()
    for block in (install_and_demo, tests):
        for command in block.split("&&"):
            words = shlex.split(command)
            assert any(c[: len(words)] == words for c in ci), (
                f"the quick start's {command.strip()!r} is not what .ci/run runs")


def test_the_first_screen_shows_a_tensorboard_folder_a_wandb_offline_run_and_a_csv():
    first_screen = README.read_text().splitlines()[:50]
    shown = [line for line in first_screen if line.startswith("grpo-doctor diagnose ")]
    for what in ("TensorBoard", "wandb offline", "CSV"):
        assert any(what in line for line in shown), f"no `diagnose` of a {what} on screen one"


def test_every_command_has_an_example_in_the_readme():
    import typer

    from grpo_doctor.cli import app

    commands = typer.main.get_command(app).commands  # a click Group
    text = README.read_text()
    missing = [name for name in commands if f"grpo-doctor {name}" not in text]
    assert not missing, f"commands without an example in the README: {missing}"
    assert "DoctorCallback(" in text and "grpo_doctor.diagnose(" in text


def test_no_install_command_names_a_package_index_grpo_doctor_is_not_on():
    """grpo-doctor has no package-index name: it is installed from a clone (`pip install
    ".[x]"`) or a git URL (`"grpo-doctor[x] @ git+..."`), never `pip install 'grpo-doctor[x]'`,
    in the docs, the examples, the package's hints or pyproject's comments."""
    sources = [README, *PAGES, *(ROOT / "examples").iterdir(), ROOT / "pyproject.toml",
               *(ROOT / "grpo_doctor").rglob("*.py")]
    requirement = re.compile(
        r"""(?:pip install\s+|"pip":\s*\[\s*)["']?(grpo-doctor(?:\[[\w,]+\])?)""")
    offenders = []
    for path in sources:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in requirement.finditer(line):
                if not re.match(r"\s*@", line[m.end():].lstrip("\"'")):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, offenders


def test_the_readme_sample_report_is_what_the_tool_prints():
    """The "What you get" sample went stale (another first action than the tool gives): its
    lines are the start of the report on that real run at 80 columns."""
    import os
    import subprocess
    import sys

    from tests.helpers import REAL_RUNS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sample = re.search(r"## What you get\n\n```\n(.*?)\n\.\.\.\n```", text, re.S)
    assert sample is not None
    lines = sample.group(1).splitlines()
    run = lines[0].split(" · ", 1)[1]
    found = list(REAL_RUNS.glob(f"*/{run}.log")) if REAL_RUNS.is_dir() else []
    if not found:
        pytest.skip("shared real runs not present")
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "grpo_doctor", "diagnose", str(found[0])],
                         capture_output=True, text=True, env=env, timeout=120).stdout
    shown = out.splitlines()
    assert shown[0] == lines[0] and shown[2:len(lines)] == lines[2:]
