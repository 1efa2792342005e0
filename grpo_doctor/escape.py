"""Names from logs are data in every output: one escaping function per output.

A column name, a TensorBoard tag, a run name, a file name or a cell of text comes from a log
that anyone may have written. Printed raw it could move the cursor, clear the screen or set
the window title (ESC sequences), hide or reorder text (bidi overrides, NUL, carriage
returns), add lines to a report (newlines), or, in a GitHub Actions log, become a workflow
command (``::error ...`` at the start of a line, ``##[...]`` anywhere in one). Every reporter
passes such text through the function for its output:

* :func:`terminal` - a terminal, a CI log, stderr: control characters, bidi controls and lone
  surrogates (undecodable bytes in a file name) become visible escapes (``\\x1b``, ``\\n``,
  ``\\u202e``), so a name is always one line; ``##[`` is broken up. The caller hands the result
  to rich as ``Text``, never as markup.
* :func:`annotation_data`, :func:`annotation_property` - GitHub workflow commands, with the
  runner's own ``%25`` / ``%0D`` / ``%0A`` (and ``%3A`` / ``%2C`` in properties) escaping.
* :func:`markdown`, :func:`xml`, :func:`html` - literal text in Markdown, in XML 1.0 (whose
  forbidden characters become visible escapes) and in HTML content or quoted attributes.
* :func:`json_dumps` - JSON whose strings round-trip exactly, with the characters a terminal
  would act on written as ``\\uXXXX`` so that printing the document is safe too.

:func:`commands_stopped` wraps output that holds names when it runs on GitHub Actions, so that
even a name rich wraps onto the start of a line cannot be read as a workflow command.
"""

from __future__ import annotations

import html as _html
import json
import os
import re
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

#: C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), bidi embeddings, overrides, isolates
#: and marks, line and paragraph separators, the BOM/zero-width no-break space, and lone
#: surrogates (``os.fsdecode`` of a file name whose bytes are not UTF-8).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: The legacy workflow-command prefix, which the Actions runner finds anywhere in a line.
_LEGACY_COMMAND = "##["
#: Characters that are Markdown syntax wherever they stand: backslash, code spans, emphasis
#: and strikethrough, links and images, table cells. ``<`` opens inline HTML or an autolink
#: only before a letter, ``/``, ``!`` or ``?`` (there it becomes ``&lt;``, so that no raw tag
#: is left in the source either).
_MD_ALWAYS = r"\\`*~\[\]|"
#: ``_`` opens or closes emphasis only at a word boundary (``kl_drift`` is safe as it is), and
#: ``&`` is syntax only when it starts an entity (``&amp;``, ``&#38;``).
_MD_INLINE = re.compile(rf"[{_MD_ALWAYS}]|<(?=[A-Za-z/!?])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])"
                        r"|&(?=#?[0-9A-Za-z]+;)")
#: What starts a block when it starts a line: a heading, a quote, a list item, a numbered list
#: item, a setext underline or a thematic break.
_MD_BLOCK_START = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|>|[-+](?=\s|$)|=+\s*$|-{3,}\s*$"
                             r"|\d{1,9}(?=[.)](?:\s|$)))")
#: What XML 1.0 cannot hold, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: In a JSON document: characters that json.dumps(ensure_ascii=False) leaves raw but that a
#: terminal acts on (C1 controls, bidi, separators) or that cannot be encoded (surrogates).
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: object) -> str:
    """``text`` with every unsafe character (see module docstring) as a visible escape."""
    return _UNSAFE.sub(_visible, str(text))


def terminal(text: object) -> str:
    """Text from a log, safe on a terminal and in a CI log: one line, no control sequence, no
    bidi reordering, no workflow command. Give it to rich as ``Text(...)``, never as markup."""
    return visible(text).replace(_LEGACY_COMMAND, "#\\#[")


def annotation_data(text: object) -> str:
    """The message of a GitHub workflow command (after the second ``::``); ``##[`` is broken
    up too, although the runner reads this line as the command it starts with."""
    s = str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return visible(s).replace(_LEGACY_COMMAND, "#\\#[")


def annotation_property(text: object) -> str:
    """A property value of a GitHub workflow command (``title=...``)."""
    return annotation_data(text).replace(":", "%3A").replace(",", "%2C")


def markdown(text: object) -> str:
    """Text (a name from a log, a summary quoting one) that renders literally in Markdown and
    the HTML it becomes, with a backslash only before what Markdown would read as syntax. One
    line: newlines become spaces, other control characters visible escapes; ``::`` and ``##[``
    are escaped too, so that no line of the source reads as a workflow command."""
    s = str(text)
    if "\n" in s or "\r" in s:
        s = " ".join(s.splitlines())
    s = visible(s)
    s = _MD_INLINE.sub(lambda m: "&lt;" if m.group() == "<" else "\\" + m.group(), s)
    s = _MD_BLOCK_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not
                                                    m.group(2)[0].isdigit()
                                                    else m.group(2) + "\\"), s, count=1)
    return s.replace("::", "\\::").replace(_LEGACY_COMMAND, "#\\#[")


def xml(text: object) -> str:
    """Text XML 1.0 can hold (ElementTree escapes the markup characters): what it forbids,
    and the controls a viewer would act on, become visible escapes."""
    return _NOT_XML.sub(_visible, _JSON_RAW.sub(_visible, str(text)))


def html(text: object) -> str:
    """Text from a log, safe in HTML content and in quoted attributes."""
    return _html.escape(visible(text), quote=True)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, ...)`` whose text is also safe to print: the
    strings decode to exactly what they held."""
    kwargs.setdefault("ensure_ascii", False)
    return _JSON_RAW.sub(_json_escape, json.dumps(obj, **kwargs))


# --- GitHub Actions -------------------------------------------------------------------------


def on_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


@contextmanager
def commands_stopped(out: IO[str] | None = None, *, enabled: bool | None = None
                     ) -> Iterator[None]:
    """On GitHub Actions, stop the runner from reading workflow commands in what is written
    inside (``::stop-commands::TOKEN`` ... ``::TOKEN::``, with an unguessable token)."""
    if not (on_github_actions() if enabled is None else enabled):
        yield
        return
    stream = out if out is not None else sys.stdout
    token = f"grpo-doctor-{secrets.token_hex(16)}"
    stream.write(f"::stop-commands::{token}\n")
    stream.flush()
    try:
        yield
    finally:
        stream.flush()
        stream.write(f"::{token}::\n")
        stream.flush()
