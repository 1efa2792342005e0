"""W&B cloud runs: fetch full-resolution history into a local parquet cache, then read it.

``fetch_run`` / ``fetch_project`` talk to the W&B server through the real ``wandb`` client
(``wandb.Api``; in wandb >= 0.27 every request goes through the ``wandb-core`` service it
starts). History comes from ``Run.scan_history``: every logged row, never ``Run.history()``'s
500-row sample. wandb-core reads the run's exported parquet files (``parquetHistory``) and pages
the not yet exported tail through GraphQL ``history(minStep, maxStep, samples)`` with
``samples`` equal to the page's step range, so nothing is sampled either way. The scan runs with
``use_cache=False``: wandb-core writes export files into ``WANDB_CACHE_DIR`` in place (no temp
file) and with its cache on would reuse a download cut off halfway; this module's cache
stands in for it.

The cache is ``<cache>/<entity>/<project>/<run_id>.parquet`` plus ``<run_id>.json``
(``{"name", "id", "state", "config", "summary", "fetched_at", "url", "rows", "notes"}``), the
layout the parquet importer reads (``notes`` say what could not be fetched as it was). Both
are written atomically, parquet first, so the cache never holds a half-written file and a run
counts as cached only once its JSON names its row count. A finished run is served from the
cache without a request; any other state is fetched again.

Retries: wandb-core's HTTP client retries 429 (honouring ``Retry-After``), 5xx and connection
errors, with the bounds given here (``retries``, exponential backoff from ``backoff`` to
``max_backoff``, ``timeout`` per request, ``download_timeout`` per history file); a download
cut off mid-body, which wandb-core does not retry, is retried here with the same bounds. A
watchdog gives up on a call that makes no progress for longer than all of that allows.

``wandb`` is imported inside functions only: importing it costs most of a second.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlparse

from grpo_doctor.atomic import write_atomic
from grpo_doctor.errors import ConfigError, FetchError, GrpoDoctorError
from grpo_doctor.importers.base import LoadOptions
from grpo_doctor.remote.wandb_cache import (
    cache_paths,
    clean_stale_temps,
    default_cache_dir,
    load_cached,
    parse_path,
    read_cached_meta,
    safe_name,
)
from grpo_doctor.remote.wandb_history import history_table
from grpo_doctor.store import Run
from grpo_doctor.text import agree, plural

T = TypeVar("T")

#: The run states W&B reports.
STATES = ("running", "finished", "crashed", "failed", "killed", "preempting", "preempted",
          "pending")

#: Entity, project and run id: what may become a path component of the cache.


#: History rows read per scan page (wandb's own default; the server pages live rows by it).
PAGE_SIZE = 1000


# --- settings ------------------------------------------------------------------------------


def _env_float(name: str, default: float) -> float:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name} must be a non-negative number, got {text!r}")
    return value


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. Defaults come from ``GRPO_DOCTOR_WANDB_<FIELD>`` when set.

    wandb-core counts its waits in whole seconds, so the waits it makes are at least 1 s;
    ``backoff`` below 1 s only shortens the retries made here (downloads cut off mid-body).
    """

    retries: int = 4              # retries after the first attempt, per request (>= 1)
    backoff: float = 1.0          # first wait, doubling on each retry
    max_backoff: float = 30.0     # longest wait between retries
    timeout: float = 30.0         # one GraphQL request
    download_timeout: float = 600.0  # one history file download, body included
    max_retry_after: float = 120.0   # longest Retry-After waited for before giving up

    @classmethod
    def from_env(cls, *, timeout: float | None = None, retries: int | None = None
                 ) -> RetryPolicy:
        d = cls()
        policy = cls(
            retries=int(_env_float("GRPO_DOCTOR_WANDB_RETRIES", d.retries)),
            backoff=_env_float("GRPO_DOCTOR_WANDB_BACKOFF", d.backoff),
            max_backoff=_env_float("GRPO_DOCTOR_WANDB_MAX_BACKOFF", d.max_backoff),
            timeout=_env_float("GRPO_DOCTOR_WANDB_TIMEOUT", d.timeout),
            download_timeout=_env_float("GRPO_DOCTOR_WANDB_DOWNLOAD_TIMEOUT",
                                        d.download_timeout),
            max_retry_after=_env_float("GRPO_DOCTOR_WANDB_MAX_RETRY_AFTER", d.max_retry_after),
        )
        if timeout is not None:
            policy = replace(policy, timeout=timeout)
        if retries is not None:
            policy = replace(policy, retries=retries)
        if policy.retries < 1:
            raise ConfigError("retries must be at least 1")
        if policy.timeout <= 0:
            raise ConfigError("timeout must be more than 0 seconds")
        return policy

    def wait(self, attempt: int) -> float:
        """The wait before retry number ``attempt`` (0-based) made here."""
        return min(self.max_backoff, self.backoff * 2 ** attempt)

    def core_settings(self) -> dict[str, Any]:
        """The wandb-core settings that bound its HTTP retries (whole seconds, >= 1)."""
        def sec(x: float) -> float:
            return float(max(1, math.ceil(x)))

        wait_min, wait_max = sec(self.backoff), sec(max(self.backoff, self.max_backoff))
        return {
            "x_graphql_retry_max": self.retries,
            "x_graphql_retry_wait_min_seconds": wait_min,
            "x_graphql_retry_wait_max_seconds": wait_max,
            "x_graphql_timeout_seconds": sec(self.timeout),
            "x_file_transfer_retry_max": self.retries,
            "x_file_transfer_retry_wait_min_seconds": wait_min,
            "x_file_transfer_retry_wait_max_seconds": wait_max,
            "x_file_transfer_timeout_seconds": sec(max(self.timeout, self.download_timeout)),
        }

    @property
    def call_budget(self) -> float:
        """The longest one call may take with every retry used (the Python-side wait)."""
        per_try = max(1.0, math.ceil(max(self.timeout, self.download_timeout)))
        per_wait = max(1.0, math.ceil(self.max_backoff), self.max_retry_after)
        return (self.retries + 1) * per_try + self.retries * per_wait + 5.0


# --- progress ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchEvent:
    """What a fetch is doing, for a progress display. ``run`` is ``entity/project/run_id``."""

    kind: Literal["start", "rows", "done", "cached", "failed", "listed"]
    run: str
    rows: int = 0
    total: int | None = None
    path: Path | None = None
    message: str = ""


ProgressFn = Callable[[FetchEvent], None]


def _notify(progress: ProgressFn | None, event: FetchEvent) -> None:
    if progress is not None:
        progress(event)


class ConsoleProgress:
    """``grpo-doctor fetch``'s display: a rich bar per run while it downloads, when stderr is
    a terminal, and one line per run on stdout saying where it was written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> ConsoleProgress:
        import sys

        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True,
                                 redirect_stdout=False, redirect_stderr=False)
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, event: FetchEvent) -> None:
        import sys

        with self._lock:
            bar = self._bar
            if event.kind in ("done", "cached", "failed") and event.run in self._tasks:
                bar.remove_task(self._tasks.pop(event.run))
            if event.kind in ("done", "cached"):
                how = "cached" if event.kind == "cached" else "fetched"
                line = f"{event.run}: {event.rows} rows {how} -> {event.path}"
                if bar is not None and sys.stdout.isatty():
                    bar.console.print(line, markup=False, highlight=False)  # above the bars
                else:
                    sys.stdout.write(line + "\n")
                    sys.stdout.flush()
            elif bar is not None and event.kind == "start":
                self._tasks[event.run] = bar.add_task(event.run, total=event.total)
            elif bar is not None and event.kind == "rows" and event.run in self._tasks:
                bar.update(self._tasks[event.run], completed=event.rows, total=event.total)


# --- errors --------------------------------------------------------------------------------


class _FatalFetchError(FetchError):
    """A failure every other run of the fetch would hit too (credentials, no connection)."""


class _Cancelled(Exception):
    """The fetch was abandoned (watchdog, interrupt, another run's fatal error)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _status_of(exc: BaseException) -> int | None:
    for e in _chain(exc):
        resp = getattr(e, "response", None)
        for attr in ("http_status", "status_code"):
            status = getattr(resp, attr, None)
            if isinstance(status, int) and status:
                return status
    text = " ".join(str(e) for e in _chain(exc))
    m = re.search(r"(?:HTTP|status)\s+(\d{3})\b", text)
    return int(m.group(1)) if m else None


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_transient(exc: BaseException) -> bool:
    """A connection cut mid-body that wandb-core gave up on without retrying."""
    text = " ".join(str(e) for e in _chain(exc)).lower()
    if "giving up after" in text or _status_of(exc) is not None:
        return False
    return any(s in text for s in ("connection reset", "unexpected eof", "broken pipe",
                                   "connection closed", ": eof"))


#: What wandb-core (Go) and Python say when a response body is not JSON.
_NOT_JSON = ("invalid character", "looking for beginning of value",
             "unexpected end of json input", "cannot unmarshal", "expecting value: line",
             "jsondecodeerror")


def _explain(exc: BaseException, *, what: str, base_url: str, policy: RetryPolicy) -> FetchError:
    """One line saying what went wrong, from whatever the wandb client raised."""
    if isinstance(exc, FetchError):
        return exc
    text = " ".join(str(e) for e in _chain(exc))
    low = text.lower()
    status = _status_of(exc)
    m = re.search(r"giving up after (\d+) attempt", low)
    attempts = f" after {m.group(1)} attempts" if m else ""
    if any(s in low for s in _NOT_JSON):
        # An HTML page or random bytes where GraphQL JSON belongs: wandb reports it as a
        # failed credential check, but the key was never judged.
        return _FatalFetchError(f"the server at {base_url} did not answer as a W&B server "
                                f"(not JSON: a captive portal, a proxy's login page or another "
                                f"service at that address?); check WANDB_BASE_URL and the "
                                f"network")
    m = re.search(r"stopped after (\d+) redirects|exceeded (\d+) redirects", low)
    if m:
        # A redirect loop (or a redirect to a login page, and on): no W&B API answers so, and
        # wandb reports it as a failed credential check.
        return _FatalFetchError(f"the server at {base_url} answered with redirects, "
                                f"{m.group(1) or m.group(2)} in a row (a loop, or a login "
                                f"page in the way?), not as a W&B server; check "
                                f"WANDB_BASE_URL and the network")
    auth_error = any(type(e).__name__ == "AuthenticationError" for e in _chain(exc))
    if status in (401, 403) or (auth_error and status is None and "connect" not in low
                                and "timeout" not in low and "deadline" not in low):
        code = f"HTTP {status}" if status else "rejected"
        if status == 403 and not auth_error:
            return FetchError(f"{what}: permission denied by the W&B server ({code}); check "
                              f"that this API key can read it")
        return _FatalFetchError(f"the W&B server at {base_url} rejected the API key ({code}): "
                                f"it is invalid or expired; run `wandb login --relogin` or set "
                                f"WANDB_API_KEY")
    if "could not find run" in low or re.search(r"\brun\b[^.]*\bnot found", low):
        return FetchError(f"{what}: no such run on {base_url} (use the run id from the run's "
                          f"URL, not its display name)")
    if "could not find project" in low or re.search(r"(project|entity)\b[^.]*not found", low):
        return FetchError(f"{what}: no such project on {base_url}, or not visible with this "
                          f"API key")
    if "connection refused" in low:
        return _FatalFetchError(f"cannot connect to the W&B server at {base_url}: connection "
                          f"refused{attempts}")
    if "no such host" in low or "network is unreachable" in low or "name resolution" in low:
        return _FatalFetchError(f"cannot reach the W&B server at {base_url}: "
                          f"{'unknown host' if 'no such host' in low else 'network unreachable'}"
                          f"{attempts}")
    if status == 429:
        return FetchError(f"{what}: rate limited by the W&B server (HTTP 429){attempts}; try "
                          f"again later or with --jobs 1")
    if status is not None and status >= 500:
        return FetchError(f"{what}: the W&B server failed (HTTP {status}){attempts}")
    if "did not respond in time" in low:  # the wait here, longer than wandb-core's retries
        return FetchError(f"{what}: no answer from wandb-core within "
                          f"{math.ceil(policy.call_budget):g} s")
    if any(s in low for s in ("timeout", "deadline exceeded", "timed out")):
        download = re.search(r"\bGET\b", text) is not None
        limit = max(policy.timeout, policy.download_timeout) if download else policy.timeout
        return FetchError(f"{what}: the W&B server at {base_url} did not "
                          f"{'send the history file' if download else 'answer'} within "
                          f"{math.ceil(limit):g} s{attempts}")
    if _is_transient(exc) or "connection reset" in low:
        return FetchError(f"{what}: the connection to {base_url} was cut during the "
                          f"download{attempts}")
    if status is not None:
        return FetchError(f"{what}: the W&B server answered HTTP {status}: "
                          f"{_one_line(str(exc), 120)}")
    return FetchError(f"{what}: {_one_line(str(exc) or type(exc).__name__)}")


# --- the wandb client ----------------------------------------------------------------------


_SETTINGS_LOCK = threading.Lock()


def _base_url() -> str:
    from wandb import env
    from wandb.sdk import wandb_setup

    try:
        settings = wandb_setup.singleton().settings
    except Exception as exc:  # wandb validates its settings (WANDB_BASE_URL=notaurl) here
        raw = os.environ.get("WANDB_BASE_URL")
        if raw is None:
            raise _FatalFetchError(f"wandb refused its settings ({type(exc).__name__}); "
                                   "check its environment variables and settings files") from None
        raise _FatalFetchError(f"WANDB_BASE_URL={raw!r} is not a URL wandb accepts; set it to "
                               "the server's URL (https://api.wandb.ai, or your own)") from None
    return str(env.get_base_url(settings.base_url)).rstrip("/")


def _credentials(base_url: str) -> str | None:
    """The API key wandb would use for ``base_url`` (None: an identity token file).

    The same order as wandb: the session's, ``WANDB_API_KEY`` (or ``WANDB_IDENTITY_TOKEN_FILE``),
    the netrc entry for the host (``NETRC``, ``~/.netrc``, ``~/_netrc``), the settings files.
    Never prompts.
    """
    host = urlparse(base_url).netloc or base_url  # wandb's netrc machine: host[:port]
    missing = _FatalFetchError(
        f"no W&B credentials for {base_url}: set WANDB_API_KEY, or run `wandb login` (it writes "
        f"a netrc entry for {host})"
    )
    try:
        from wandb.errors import AuthenticationError
        from wandb.sdk.lib.wbauth import AuthApiKey, authenticate_session
    except ImportError:  # pragma: no cover - wandb < 0.24 resolves keys itself
        import netrc

        key = os.environ.get("WANDB_API_KEY")
        if not key:
            with contextlib.suppress(OSError, netrc.NetrcParseError):
                entry = netrc.netrc(os.environ.get("NETRC")).authenticators(host)
                key = entry[2] if entry else None
        if not key:
            raise missing from None
        return key
    try:
        auth = authenticate_session(host=base_url, source="grpo-doctor", prompt=False,
                                    update_session=False)
    except AuthenticationError as exc:
        raise FetchError(f"W&B credentials for {base_url}: {_one_line(str(exc))}") from None
    if auth is None:
        raise missing
    return auth.api_key if isinstance(auth, AuthApiKey) else None


@contextlib.contextmanager
def _core_settings(values: Mapping[str, Any]) -> Iterator[None]:
    """Set wandb's global settings while a ``wandb.Api`` copies them, then restore them."""
    from wandb.sdk import wandb_setup

    settings = wandb_setup.singleton().settings
    fields = getattr(type(settings), "model_fields", {})
    known = {k: v for k, v in values.items() if k in fields}
    with _SETTINGS_LOCK:
        old = {k: getattr(settings, k) for k in known}
        try:
            for k, v in known.items():
                setattr(settings, k, v)
            yield
        finally:
            for k, v in old.items():
                setattr(settings, k, v)


def _make_api(policy: RetryPolicy, entity: str) -> tuple[Any, str]:
    """A ``wandb.Api`` bounded by ``policy``, and the base URL it talks to."""
    import wandb

    base_url = _base_url()
    api_key = _credentials(base_url)
    with _core_settings(policy.core_settings()):
        try:
            # The entity given: wandb would otherwise ask the server for the default one.
            api = wandb.Api(overrides={"entity": entity}, api_key=api_key,
                            timeout=int(math.ceil(policy.call_budget)))
        except Exception as exc:  # wandb raises many kinds
            err = _explain(exc, what=base_url, base_url=base_url, policy=policy)
            if "rejected the API key (rejected)" in str(err):
                # No HTTP status: the server answered the credential check, but wandb does
                # not say with what. Anything not shaped as W&B's answer is not a verdict on
                # the key.
                other = _not_a_wandb_answer(base_url, api_key, policy.timeout)
                if other is not None:
                    raise _FatalFetchError(other) from None
            raise err from None
    return api, base_url


#: A credential check's answer is a few hundred bytes; past this it is not W&B's.
MAX_PROBE_BYTES = 1 << 20


def _not_a_wandb_answer(base_url: str, api_key: str | None, timeout: float) -> str | None:
    """Why the server's answer to the credential check wandb makes (the ``viewer`` query) is
    not a W&B server's, or None when it is (or cannot be told): the one line to say instead
    of blaming the key. Asks once more, itself, reading at most ``MAX_PROBE_BYTES``."""
    import base64
    import urllib.error
    import urllib.request

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    headers = {"Content-Type": "application/json", "User-Agent": "grpo-doctor"}
    if api_key:
        token = base64.b64encode(f"api:{api_key}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    body = json.dumps({"query": "query Viewer { viewer { id entity username } }"}).encode()
    request = urllib.request.Request(f"{base_url}/graphql", data=body, headers=headers,
                                     method="POST")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=max(1.0, timeout)) as response:
            length = response.headers.get("Content-Length")
            data = response.read(MAX_PROBE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = exc.headers.get("Location", "elsewhere")
            return (f"the server at {base_url} redirects the W&B API to {_one_line(where, 80)} "
                    f"(HTTP {exc.code}), which no W&B server does; check WANDB_BASE_URL")
        return None  # a status wandb would have named: nothing to add
    except (OSError, ValueError):
        return None  # gone, or unreachable now: the client's account stands
    not_wandb = f"the server at {base_url} did not answer as a W&B server"
    check = "check WANDB_BASE_URL and the network"
    if len(data) > MAX_PROBE_BYTES:
        size = (f"{_human(int(length))}" if length and length.isdigit()
                else f"more than {_human(MAX_PROBE_BYTES)}")
        return (f"{not_wandb} (it sent {size} in answer to a credential check of a few "
                f"hundred bytes); {check}")
    try:
        doc = json.loads(data)
    except ValueError:
        return (f"{not_wandb} (not JSON: a captive portal, a proxy's login page or another "
                f"service at that address?); {check}")
    payload = doc.get("data") if isinstance(doc, dict) else None
    if isinstance(payload, dict) and "viewer" in payload:
        return None  # W&B's own answer: the key is what it did not recognise
    shown = _one_line(json.dumps(doc, ensure_ascii=True), 60)
    return f"{not_wandb} (GraphQL with no viewer in its data: {shown}); {check}"


def _human(n: int) -> str:
    from grpo_doctor.files import human_bytes

    return human_bytes(n)


def _watched(fn: Callable[[Callable[[], None]], T], *, budget: float, what: str,
             cancel: threading.Event) -> T:
    """Run ``fn(tick)`` in a thread; give up when it makes no progress for ``budget`` s.

    ``tick`` marks progress and raises ``_Cancelled`` once the fetch is abandoned, so an
    abandoned thread stops at its next step and writes nothing.
    """
    box: dict[str, Any] = {}
    last = [time.monotonic()]

    def tick() -> None:
        if cancel.is_set():
            raise _Cancelled
        last[0] = time.monotonic()

    def target() -> None:
        try:
            box["value"] = fn(tick)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"grpo-doctor fetch {what}", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
            if worker.is_alive() and time.monotonic() - last[0] > budget:
                raise FetchError(f"{what}: no progress for {budget:g} s; gave up")
            if worker.is_alive() and cancel.is_set():
                raise _Cancelled
    except BaseException:
        cancel.set()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


# --- one run -------------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


#: The widest step window one live-history request may ask for: wandb-core sends the window's
#: width as the GraphQL ``samples`` argument, an Int (32 bits).
MAX_LIVE_SPAN = 1 << 30

_LIVE_STEPS_QUERY = """
query RunLiveSteps($entity: String!, $project: String!, $name: String!, $liveKeys: [String!]!) {
    project(name: $project, entityName: $entity) {
        run(name: $name) { parquetHistory(liveKeys: $liveKeys) { liveData } }
    }
}
"""


def _live_steps(run: Any) -> tuple[list[int] | None, list[str]]:
    """The steps of the rows not yet exported to parquet (the same ``parquetHistory`` query
    wandb-core makes), sorted, and notes on the steps that cannot be fetched as they are; None
    when they cannot be asked for."""
    try:
        data = run._exec(_LIVE_STEPS_QUERY, liveKeys=["_step"])
        live = data["project"]["run"]["parquetHistory"]["liveData"] or []
    except Exception:  # an older client or server: page as wandb does
        return None, []
    steps: set[int] = set()
    fractional: list[float] = []
    beyond: list[Any] = []
    for item in live:
        step = item.get("_step") if isinstance(item, dict) else None
        if not isinstance(step, (int, float)) or isinstance(step, bool) or step != step:
            continue
        if abs(step) >= 2.0 ** 63:
            beyond.append(step)
        else:
            if isinstance(step, float) and not step.is_integer():
                fractional.append(step)
            steps.add(int(step))
    notes = []
    if fractional:
        notes.append(f"the W&B server lists {plural(len(fractional), 'row')} whose step "
                     "is not a whole "
                     f"number (e.g. {fractional[0]:g}); the wandb client reads "
                     f"{agree(len(fractional), 'it', 'them')} at the "
                     f"whole step below")
    if beyond:
        notes.append(f"{plural(len(beyond), 'row')} at a step beyond the 64-bit integer range "
                     "(e.g. "
                     f"{float(beyond[0]):g}) could not be fetched")
    return sorted(steps), notes


def _windows(min_step: int, stop: int, live: list[int] | None
             ) -> Generator[tuple[int, int, bool], bool, None]:
    """Step windows [lo, hi) to ask for, and whether each may be empty without news; sent
    whether the window asked for came back empty.

    Below the first live step, rows come from the exported parquet files that wandb-core reads
    locally: windows grow (doubling) over empty stretches, so a history whose steps jump to
    1e7 or 2^62 is crossed in a few dozen requests rather than one per thousand steps. From the
    first live step on, each request goes to the server, so windows cover only the live steps
    known to exist, at most ``PAGE_SIZE`` of them and ``MAX_LIVE_SPAN`` wide."""
    first_live = live[0] if live else stop
    lo, width = min_step, PAGE_SIZE
    while lo < min(first_live, stop):
        hi = min(lo + width, first_live, stop)
        # A window reaching the first live step makes wandb-core query the server too.
        if hi >= first_live and hi - lo > MAX_LIVE_SPAN:
            hi = max(lo + 1, first_live - 1)
        empty = yield lo, hi, True
        width = PAGE_SIZE if not empty else min(width * 2, 1 << 62)
        lo = hi
    if live is None:  # not known: page the rest as wandb does, a page at a time
        while lo < stop:
            yield lo, min(lo + PAGE_SIZE, stop), False
            lo += PAGE_SIZE
        return
    i = 0
    ahead = [s for s in live if s >= lo]
    while i < len(ahead):
        start = ahead[i]
        j = i + 1
        while j < len(ahead) and j - i < PAGE_SIZE and ahead[j] - start < MAX_LIVE_SPAN:
            j += 1
        yield start, ahead[j - 1] + 1, False
        i = j


class _HistoryBudget:
    """The history's size as it arrives, page by page, against the read limit
    (``GRPO_DOCTOR_MAX_READ_MB``, as for a file read whole): a history too large to hold is
    refused at the page that crosses the limit, not after every page has been fetched."""

    def __init__(self, label: str) -> None:
        from grpo_doctor.files import max_read_bytes

        self.label = label
        self.limit = max_read_bytes()
        self.size = 0
        self.rows = 0

    def add(self, page: Sequence[Mapping[str, Any]]) -> None:
        """Count ``page``'s rows at their size as compact JSON (what the server sends)."""
        if not page:
            return
        self.rows += len(page)
        self.size += len(json.dumps(page, separators=(",", ":"), default=str))
        if self.size > self.limit:
            from grpo_doctor.files import human_bytes

            raise FetchError(
                f"{self.label}: the history's first {plural(self.rows, 'row')} are already "
                f"{human_bytes(self.size)}, more than the {human_bytes(self.limit)} "
                f"grpo-doctor reads into memory (GRPO_DOCTOR_MAX_READ_MB raises the limit)")


def _scan(run: Any, tick: Callable[[], None], on_rows: Callable[[int], None],
          label: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    """Every history row, paged over the steps that exist (see ``_windows``), and notes on the
    rows that could not be fetched as they are; refused at the page where the rows so far
    pass the read limit (``_HistoryBudget``).

    Paging drives wandb's ``HistoryScan`` one window at a time (its ``page_offset`` and
    ``page_size`` then ``_load_next``, what its iterator does with fixed windows); a client
    without them is iterated as it comes."""
    budget = _HistoryBudget(label or str(getattr(run, "path", "")))
    try:
        scan = run.scan_history(page_size=PAGE_SIZE, use_cache=False)
    except TypeError:  # pragma: no cover - wandb < 0.27 has no parquet cache to bypass
        scan = run.scan_history(page_size=PAGE_SIZE)
    rows: list[dict[str, Any]] = []
    stop = getattr(scan, "_stop_step", None)
    if not (isinstance(stop, int) and hasattr(scan, "_load_next")
            and hasattr(scan, "page_offset")):  # pragma: no cover - another wandb
        for row in scan:
            rows.append(row)
            if len(rows) % PAGE_SIZE == 0:
                budget.add(rows[-PAGE_SIZE:])
                tick()
                on_rows(len(rows))
        budget.add(rows[len(rows) - len(rows) % PAGE_SIZE:])
        on_rows(len(rows))
        return rows, []
    live, notes = _live_steps(run)
    windows = _windows(int(getattr(scan, "min_step", 0)), stop, live)
    try:
        lo, hi, _ = next(windows)
        while True:
            tick()
            scan.page_offset, scan.page_size = lo, hi - lo
            scan._load_next()
            # A gap is a key a row lacks: dropped at once, so that a wide exported table
            # (a new key at each step) does not sit here as millions of Nones.
            page = [{k: v for k, v in row.items() if v is not None} for row in scan.rows]
            scan.rows = []
            budget.add(page)
            rows.extend(page)
            on_rows(len(rows))
            lo, hi, _ = windows.send(not page)
    except StopIteration:
        pass
    return rows, notes


def _fetch_into_cache(api: Any, entity: str, project: str, run_id: str, parquet: Path,
                      meta_path: Path, policy: RetryPolicy, base_url: str,
                      progress: ProgressFn | None, tick: Callable[[], None]) -> Path:
    label = f"{entity}/{project}/{run_id}"
    try:
        run = api.run(f"{entity}/{project}/{run_id}")
        state = str(run.state)
        total = int(getattr(run, "lastHistoryStep", -1)) + 1
    except Exception as exc:
        raise _explain(exc, what=label, base_url=base_url, policy=policy) from None
    tick()
    _notify(progress, FetchEvent("start", label, total=total or None))

    attempt = 0
    while True:
        try:
            rows, notes = _scan(run, tick, lambda n: _notify(
                progress, FetchEvent("rows", label, rows=n, total=total or None)), label)
            break
        except _Cancelled:
            raise
        except Exception as exc:
            if not _is_transient(exc) or attempt >= policy.retries:
                err = _explain(exc, what=label, base_url=base_url, policy=policy)
                if _is_transient(exc):
                    err = FetchError(f"{err} ({attempt + 1} attempts)")
                raise err from None
            time.sleep(policy.wait(attempt))
            attempt += 1
            tick()

    data, n_rows, _dropped = history_table(rows, label)
    config = _json_safe(dict(run.config))
    summary_src = getattr(run, "summary_metrics", None)
    summary = _json_safe(dict(summary_src if summary_src is not None else run.summary))
    meta = {
        "name": run.name or run_id,
        "id": run_id,
        "state": state,
        "config": config,
        "summary": summary,
        "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "url": getattr(run, "url", None) or f"{base_url}/{entity}/{project}/runs/{run_id}",
        "rows": n_rows,
        "notes": notes,
    }
    tick()  # the last point at which an abandoned fetch stops: nothing written yet
    clean_stale_temps(parquet.parent, run_id)
    write_atomic(parquet, data, force=True, in_place=False)
    write_atomic(meta_path, json.dumps(meta, indent=1, default=str) + "\n", force=True,
                 in_place=False)
    _notify(progress, FetchEvent("done", label, rows=n_rows, total=n_rows, path=parquet))
    return parquet


class _Session:
    """One ``wandb.Api`` (made on first need) shared by the runs of one fetch."""

    def __init__(self, policy: RetryPolicy, entity: str) -> None:
        self.policy = policy
        self.entity = entity
        self.cancel = threading.Event()
        self._api: Any = None
        self._base_url = ""
        self._lock = threading.Lock()

    def api(self) -> tuple[Any, str]:
        with self._lock:
            if self._api is None:
                self._api, self._base_url = _watched(
                    lambda tick: _make_api(self.policy, self.entity),
                    budget=self.policy.call_budget,
                    what="connecting to W&B", cancel=self.cancel)
            return self._api, self._base_url

    def fetch(self, entity: str, project: str, run_id: str, cache_dir: Path, *,
              refresh: bool, progress: ProgressFn | None) -> Path:
        label = f"{entity}/{project}/{run_id}"
        parquet, meta_path = cache_paths(cache_dir, entity, project, run_id)
        if not refresh:
            meta = read_cached_meta(parquet)
            if meta is not None and meta.get("state") == "finished":
                _notify(progress, FetchEvent("cached", label, rows=meta["rows"],
                                             total=meta["rows"], path=parquet))
                return parquet
        api, base_url = self.api()
        return _watched(
            lambda tick: _fetch_into_cache(api, entity, project, run_id, parquet, meta_path,
                                           self.policy, base_url, progress, tick),
            budget=self.policy.call_budget, what=label, cancel=self.cancel)


# --- public --------------------------------------------------------------------------------


def fetch_run(entity: str, project: str, run_id: str, *, cache_dir: str | os.PathLike[str]
              | None = None, refresh: bool = False, timeout: float | None = None,
              retries: int | None = None, progress: ProgressFn | None = None) -> Path:
    """Fetch one run's full history, config and summary into the cache; its parquet path.

    A finished run already in the cache is returned without a request unless ``refresh``.
    """
    entity, project = safe_name(entity, "entity"), safe_name(project, "project")
    run_id = safe_name(run_id, "run id")
    policy = RetryPolicy.from_env(timeout=timeout, retries=retries)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    session = _Session(policy, entity)
    label = f"{entity}/{project}/{run_id}"
    try:
        return session.fetch(entity, project, run_id, cache, refresh=refresh,
                             progress=progress)
    except GrpoDoctorError as exc:
        _notify(progress, FetchEvent("failed", label, message=str(exc)))
        raise
    finally:
        session.cancel.set()


def run_filters(*, state: str | Sequence[str] | None = None, tags: Sequence[str] = (),
                since: str | date | None = None) -> dict[str, Any]:
    """The W&B (MongoDB-style) run filter for the options: state in any of ``state``, every
    tag in ``tags``, created on or after ``since``."""
    parts: list[dict[str, Any]] = []
    if state:
        states = [s.strip().lower() for s in (state.split(",") if isinstance(state, str)
                                              else state) if s.strip()]
        bad = [s for s in states if s not in STATES]
        if bad:
            raise ConfigError(f"--state: unknown run state {bad[0]!r}; states: "
                              f"{', '.join(STATES)}")
        parts.append({"state": states[0]} if len(states) == 1 else {"state": {"$in": states}})
    for tag in tags:
        parts.append({"tags": {"$in": [tag]}})
    if since:
        parts.append({"createdAt": {"$gte": _since(since)}})
    if not parts:
        return {}
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _since(value: str | date) -> str:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"--since: expected a date like 2026-01-31 or an ISO 8601 time, "
                              f"got {value!r}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


def list_runs(session: _Session, entity: str, project: str, filters: Mapping[str, Any],
              limit: int | None) -> list[tuple[str, str]]:
    """(run id, state) of the project's runs matching ``filters``, newest first."""
    label = f"{entity}/{project}"

    def listing(tick: Callable[[], None]) -> list[tuple[str, str]]:
        api, base_url = session.api()
        out: list[tuple[str, str]] = []
        try:
            runs = api.runs(label, filters=dict(filters), order="-created_at",
                            per_page=min(limit or 50, 50))
            for run in runs:
                tick()
                out.append((str(run.id), str(run.state)))
                if limit is not None and len(out) >= limit:
                    break
        except Exception as exc:
            raise _explain(exc, what=label, base_url=base_url, policy=session.policy) from None
        return out

    session.api()  # credentials and connection errors first, each with its own message
    return _watched(listing, budget=session.policy.call_budget, what=label,
                    cancel=session.cancel)


def fetch_project(entity: str, project: str, *, state: str | Sequence[str] | None = None,
                  tags: Sequence[str] = (), since: str | date | None = None,
                  limit: int | None = None, jobs: int = 4,
                  cache_dir: str | os.PathLike[str] | None = None, refresh: bool = False,
                  timeout: float | None = None, retries: int | None = None,
                  progress: ProgressFn | None = None) -> list[Path]:
    """Fetch every run of a project matching the filters (newest first, at most ``limit``),
    ``jobs`` at a time; their parquet paths in that order.

    Finished runs already cached are not fetched again. If some runs fail, the others are
    still fetched and cached, and one ``FetchError`` names the failures; a failure every run
    would hit (credentials, no connection) stops the fetch at once.
    """
    entity, project = safe_name(entity, "entity"), safe_name(project, "project")
    if jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    if limit is not None and limit < 1:
        raise ConfigError("--limit must be at least 1")
    filters = run_filters(state=state, tags=tags, since=since)
    policy = RetryPolicy.from_env(timeout=timeout, retries=retries)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    session = _Session(policy, entity)
    try:
        listed = list_runs(session, entity, project, filters, limit)
        _notify(progress, FetchEvent("listed", f"{entity}/{project}", total=len(listed)))
        failures: list[tuple[str, str]] = []
        paths: dict[str, Path] = {}

        def one(run_id: str) -> Path:
            label = f"{entity}/{project}/{run_id}"
            try:
                safe_name(run_id, "run id")
                return session.fetch(entity, project, run_id, cache, refresh=refresh,
                                     progress=progress)
            except GrpoDoctorError as exc:
                _notify(progress, FetchEvent("failed", label, message=str(exc)))
                raise

        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grpo-doctor-fetch") as ex:
            futures = {ex.submit(one, run_id): run_id for run_id, _ in listed}
            pending = set(futures)
            try:
                _collect(futures, pending, paths, failures)
            except BaseException:
                session.cancel.set()  # running fetches stop at their next step
                for fut in futures:
                    fut.cancel()
                raise
        if failures:
            detail = "; ".join(msg if run_id in msg else f"{run_id}: {msg}"
                               for run_id, msg in failures[:3])
            more = f"; and {len(failures) - 3} more" if len(failures) > 3 else ""
            raise FetchError(f"{len(failures)} of {len(listed)} runs of {entity}/{project} "
                             f"failed ({len(paths)} fetched): {detail}{more}")
        return [paths[run_id] for run_id, _ in listed]
    finally:
        session.cancel.set()


def _collect(futures: Mapping[Future[Path], str], pending: set[Future[Path]],
             paths: dict[str, Path], failures: list[tuple[str, str]]) -> None:
    """Wait for the runs' fetches; a fatal failure (one every run would hit) is raised."""
    while pending:
        done, pending = wait(pending, return_when=FIRST_EXCEPTION)
        for fut in done:
            run_id = futures[fut]
            exc = fut.exception()
            if exc is None:
                paths[run_id] = fut.result()
            elif isinstance(exc, _FatalFetchError):
                raise exc
            elif isinstance(exc, (GrpoDoctorError, _Cancelled)):
                failures.append((run_id, str(exc)))
            else:
                raise exc


def load_wandb_uri(uri: str, options: LoadOptions) -> list[Run]:
    """Runs of ``wandb://entity/project/run_id`` (one) or ``wandb://entity/project`` (all),
    fetched into the default cache first (finished runs already cached are not fetched)."""
    entity, project, run_id = parse_path(uri)
    if run_id is not None:
        paths = [fetch_run(entity, project, run_id)]
    else:
        paths = fetch_project(entity, project)
    runs: list[Run] = []
    for path in paths:
        runs.extend(load_cached(path, options))
    return runs
