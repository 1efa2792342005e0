"""A local stand-in for the W&B server, for driving the real wandb client in tests.

The real ``wandb.Api`` (and the ``wandb-core`` service it starts) is pointed at this server
with ``WANDB_BASE_URL=http://127.0.0.1:PORT``. It answers the requests that client makes with
the response shapes recorded in ``tests/fixtures/wandb_api/`` (see ``requests.jsonl`` there
for the transcript of one ``grpo-doctor fetch``), filled in with the test's runs. History is
served both ways wandb serves it: as exported parquet files behind ``parquetHistory`` and as
"live" rows paged through ``history(minStep, maxStep, samples)``.

Faults (HTTP statuses with headers, connection resets, stalls, truncated bodies) are scripted
per kind of request, and every request is counted, so a test can assert "no new request".
"""

from __future__ import annotations

import io
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd

FIXTURES = Path(__file__).parent / "fixtures" / "wandb_api"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@dataclass
class FakeRun:
    entity: str
    project: str
    run_id: str
    rows: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    state: str = "finished"
    display_name: str = ""
    tags: list[str] = field(default_factory=list)
    created_at: str = "2026-01-05T10:00:00Z"
    #: "parquet": history exported to one parquet file; "live": paged through GraphQL;
    #: "split": the first half exported, the rest live (a run still being exported).
    history: str = "parquet"

    @property
    def last_step(self) -> int:
        return max((int(r["_step"]) for r in self.rows), default=-1)

    def node(self) -> dict[str, Any]:
        """The run as the ``RunFragment`` GraphQL response shape holds it."""
        node = dict(fixture("run_node.json"))
        node.update(
            name=self.run_id,
            displayName=self.display_name or self.run_id,
            state=self.state,
            tags=self.tags,
            createdAt=self.created_at,
            config=json.dumps({k: {"value": v, "desc": None} for k, v in self.config.items()}),
            summaryMetrics=json.dumps(self.summary),
            historyLineCount=len(self.rows),
            historyKeys={"lastStep": self.last_step, "keys": {}},
        )
        return node


def make_rows(n: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` history rows as a GRPO trainer logs them (TRL names), steps 0..n-1."""
    rows = []
    for i in range(n):
        rows.append({
            "_step": i,
            "_runtime": 2.0 * i,
            "_timestamp": 1_767_000_000.0 + 2.0 * i,
            "train/global_step": i,
            "train/entropy": 1.2 - 0.0004 * i + 0.01 * ((i * 7 + seed) % 5),
            "train/kl": 0.001 * i,
            "train/reward": 0.2 + 0.0003 * i,
            "train/loss": 0.05 + 0.001 * ((i * 3) % 7),
        })
    return rows


@dataclass
class Fault:
    """What to do instead of answering, for the next ``times`` requests of a kind.

    ``kind`` is a request kind (see ``classify``) or ``"any"``; ``action`` is ``"status"``
    (answer ``status`` with ``headers`` and ``body``), ``"reset"`` (close the connection
    without answering), ``"stall"`` (wait ``seconds`` first, then answer normally) or
    ``"truncate"`` (announce the full length, send half, close).
    """

    kind: str
    action: str = "status"
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b'{"errors":[{"message":"internal server error"}]}'
    times: int = 1
    seconds: float = 0.0


def classify(method: str, path: str, query: str) -> str:
    """The kind of a request: viewer, run, runs, history_keys, parquet_history, history_page,
    sampled_history, file, telemetry or other."""
    if path.startswith("/sdk/otel"):
        return "telemetry"
    if path.startswith("/files/"):
        return "file"
    if path.rstrip("/") != "/graphql":
        return "other"
    if "parquetHistory" in query:
        return "parquet_history"
    if re.search(r"\bhistory\s*\(\s*minStep", query):
        return "history_page"
    if "sampledHistory" in query:
        return "sampled_history"
    if re.search(r"\bruns\s*\(", query):
        return "runs"
    if "viewer" in query:
        return "viewer"
    if re.search(r"\brun\s*\(\s*name", query):
        return "history_keys" if "RunFragment" not in query else "run"
    return "other"


class FakeWandb:
    """The server: ``add_run``, ``fail``, ``start`` (-> base URL), ``count``, ``stop``."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str, str], FakeRun] = {}
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, dict[str, Any], float]] = []  # kind, path, vars, time
        self.auth_ok: Callable[[str], bool] = lambda header: True
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._parquet_cache: dict[tuple[str, str, str, int], bytes] = {}

    # --- setup ----------------------------------------------------------------------------

    def add_run(self, run: FakeRun) -> FakeRun:
        self.runs[(run.entity, run.project, run.run_id)] = run
        return run

    def fail(self, kind: str, **kw: Any) -> Fault:
        fault = Fault(kind=kind, **kw)
        with self._lock:
            self.faults.append(fault)
        return fault

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self, port: int = 0) -> str:
        self._server = _QuietServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # --- bookkeeping ------------------------------------------------------------------------

    def count(self, kind: str | None = None) -> int:
        """Requests received (telemetry excluded), of one kind if given."""
        with self._lock:
            return sum(1 for k, *_ in self.requests
                       if k != "telemetry" and (kind is None or k == kind))

    def times(self, kind: str) -> list[float]:
        """When each request of a kind arrived (``time.monotonic``)."""
        with self._lock:
            return [t for k, _, _, t in self.requests if k == kind]

    def _take_fault(self, kind: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.kind in (kind, "any"):
                    fault.times -= 1
                    return fault
        return None

    # --- answers ------------------------------------------------------------------------------

    def _split(self, run: FakeRun) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(exported rows, live rows)."""
        if run.history == "parquet":
            return run.rows, []
        if run.history == "live":
            return [], run.rows
        half = len(run.rows) // 2
        return run.rows[:half], run.rows[half:]

    def parquet_bytes(self, run: FakeRun, part: int) -> bytes:
        key = (run.entity, run.project, run.run_id, part)
        if key not in self._parquet_cache:
            exported, _ = self._split(run)
            buf = io.BytesIO()
            pd.DataFrame(exported).to_parquet(buf, index=False)
            self._parquet_cache[key] = buf.getvalue()
        return self._parquet_cache[key]

    def graphql(self, kind: str, variables: dict[str, Any]) -> dict[str, Any]:
        entity = str(variables.get("entity") or variables.get("entityName") or "")
        project = str(variables.get("project") or variables.get("projectName") or "")
        name = str(variables.get("name") or variables.get("runName") or variables.get("run") or "")
        if kind == "viewer":
            return fixture("viewer.json")
        if kind == "runs":
            return self._runs_page(entity, project, variables)
        run = self.runs.get((entity, project, name))
        if run is None:
            return fixture("run_not_found.json")
        if kind == "run":
            return {"data": {"project": {"run": {"projectId": "1", **run.node()}}}}
        if kind == "history_keys":
            return {"data": {"project": {"run": {
                "historyKeys": {"lastStep": run.last_step, "keys": {}}}}}}
        exported, live = self._split(run)
        if kind == "parquet_history":
            urls = ([f"{self.base_url}/files/{entity}/{project}/{name}/0.parquet"]
                    if exported else [])
            live_steps = [{"_step": r["_step"]} for r in live]
            return {"data": {"project": {"run": {"parquetHistory": {
                "parquetUrls": urls, "liveData": live_steps}}}}}
        if kind == "history_page":
            lo, hi, size = variables["minStep"], variables["maxStep"], variables["pageSize"]
            if not -(1 << 31) <= size < 1 << 31:  # GraphQL Int is 32 bits, as W&B enforces
                return {"errors": [{"message": f"Int cannot represent non 32-bit signed "
                                               f"integer value: {size}"}]}
            page = [json.dumps(r) for r in live if lo <= r["_step"] < hi][:size]
            return {"data": {"project": {"run": {"history": page}}}}
        return {"errors": [{"message": f"fake server: unhandled {kind}"}]}

    def _runs_page(self, entity: str, project: str,
                   variables: dict[str, Any]) -> dict[str, Any]:
        runs = [r for (e, p, _), r in self.runs.items() if e == entity and p == project]
        if not runs:
            return fixture("project_not_found.json")
        filters = json.loads(variables.get("filters") or "{}")
        runs = [r for r in runs if _matches(r, filters)]
        runs.sort(key=lambda r: r.created_at, reverse=True)
        start = int(variables.get("cursor") or 0)
        per_page = int(variables.get("perPage") or 50)
        page = runs[start:start + per_page]
        end = start + len(page)
        body = fixture("runs_page.json")
        proj = body["data"]["project"]
        proj["runCount"] = len(runs)
        proj["runs"] = {
            "edges": [{"node": {"projectId": "1", **r.node()}, "cursor": str(start + i + 1)}
                      for i, r in enumerate(page)],
            "pageInfo": {"endCursor": str(end), "hasNextPage": end < len(runs)},
        }
        return body


def _matches(run: FakeRun, filters: dict[str, Any]) -> bool:
    """The subset of W&B's mongo-style run filters that grpo-doctor sends."""
    for key, cond in filters.items():
        if key == "$and":
            if not all(_matches(run, c) for c in cond):
                return False
        elif key == "state":
            if isinstance(cond, dict) and "$in" in cond:
                if run.state not in cond["$in"]:
                    return False
            elif run.state != cond:
                return False
        elif key == "tags":
            want = cond.get("$in", []) if isinstance(cond, dict) else [cond]
            if not set(want) & set(run.tags):
                return False
        elif key == "createdAt" and "$gte" in cond and run.created_at < cond["$gte"]:
            return False
    return True


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up on a stalled answer: expected here, not worth a traceback.
        pass


def _handler(fake: FakeWandb) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                  ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _reset(self) -> None:
            # An RST rather than a clean FIN: what a dropped connection looks like.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            self.close_connection = True

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            query, variables = "", dict[str, Any]()
            if self.path.rstrip("/") == "/graphql" and raw:
                doc = json.loads(raw)
                query, variables = doc.get("query", ""), doc.get("variables") or {}
            kind = classify(self.command, self.path, query)
            with fake._lock:
                fake.requests.append((kind, self.path, variables, time.monotonic()))
            if kind == "telemetry":
                return self._send(200, b"{}")
            fault = fake._take_fault(kind)
            if fault is not None:
                if fault.action == "status":
                    return self._send(fault.status, fault.body, fault.headers)
                if fault.action == "reset":
                    return self._reset()
                if fault.action == "stall":
                    time.sleep(fault.seconds)
            if kind == "file":
                return self._file(fault)
            if not fake.auth_ok(self.headers.get("Authorization", "")):
                return self._send(401, json.dumps(fixture("unauthorized.json")).encode())
            if kind in ("other",):
                return self._send(404, b'{"errors":[{"message":"not found"}]}')
            self._send(200, json.dumps(fake.graphql(kind, variables)).encode())

        def _file(self, fault: Fault | None) -> None:
            parts = self.path.split("/")  # /files/<entity>/<project>/<run>/<i>.parquet
            run = fake.runs.get((parts[2], parts[3], parts[4])) if len(parts) == 6 else None
            if run is None:
                return self._send(404, b"not found", ctype="text/plain")
            data = fake.parquet_bytes(run, int(parts[5].split(".")[0]))
            if fault is not None and fault.action == "truncate":
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                return self._reset()
            self._send(200, data, ctype="application/octet-stream")

        do_GET = do_POST = do_PUT = _handle

    return Handler
