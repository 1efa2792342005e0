"""History and summary records in wandb-core's layout taken apart in bulk with numpy: a batch of
records at a time, a key's values kept as one piece of bytes, plain JSON numbers read by
Arrow's correctly rounded parser in one call (the importer's docstring says more).
"""


from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from grpo_doctor.importers._bytes import HASH_KEYS, WORD_MASKS, Buffer, gather_rows, varint
from grpo_doctor.importers.wandb_offline.log import _clean_log_spans, iter_log_records
from grpo_doctor.importers.wandb_offline.records import _apply_record, _loads, _RunLog
from grpo_doctor.text import plural

# --- history and summary records in bulk ------------------------------------------------------
#
# Nearly all of a run's records are history and summary records of one layout: Record{num,
# history{item{nested_key..., value_json}..., step{num}}} and Record{num, summary{update{...}...}}.
# Those are taken apart with numpy, a batch of records at a time, field by field across the
# batch; each distinct key's bytes are parsed once with protobuf, and a key's values are kept
# as one comma-joined JSON text per batch. Any history or summary record in another layout
# (other fields, another order, summary removals, bytes that are not ASCII in a summary value,
# ...) sends the whole file through the record-by-record reader above, so that what is read
# is exactly what protobuf would parse.

_BULK_BATCH = 8192  # records decoded together
_ROOM = 8 << 20  # bytes of room after a log for its records split over blocks
_MAX_KEY_BYTES = 256


class _JsonTexts:
    """One key's history values, one piece per batch of records: ASCII values back to back
    (bytes), or comma-joined text where one is not ASCII (str); no str is made per value.
    Iterating yields the values one by one; ``numbers`` reads them all at once."""

    __slots__ = ("lengths", "pieces", "rows")

    def __init__(self) -> None:
        self.pieces: list[bytes | str] = []
        self.lengths: list[np.ndarray] = []
        self.rows: list[np.ndarray] = []

    def add(self, piece: bytes | str, lengths: np.ndarray, rows: np.ndarray) -> None:
        self.pieces.append(piece)
        self.lengths.append(lengths)
        self.rows.append(rows)

    def __len__(self) -> int:
        return sum(len(n) for n in self.lengths)

    def joined(self) -> str:
        return ",".join(",".join(self._values(p, n)) if isinstance(p, bytes) else p
                        for p, n in zip(self.pieces, self.lengths))

    @staticmethod
    def _values(piece: bytes | str, lengths: np.ndarray) -> Iterator[str]:
        pos = 0
        step = 1 if isinstance(piece, str) else 0  # the commas between values
        for n in lengths.tolist():
            value = piece[pos : pos + n]
            yield value.decode("ascii") if isinstance(value, bytes) else value
            pos += n + step

    def __iter__(self) -> Iterator[str]:
        for piece, lengths in zip(self.pieces, self.lengths):
            yield from self._values(piece, lengths)

    def numbers(self) -> np.ndarray | None:
        """All values as float64, exactly as ``json.loads`` and ``float`` read them, when
        every one is a plain JSON number; else None."""
        if not all(isinstance(p, bytes) for p in self.pieces):
            return None
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int32)
        return _json_numbers(b"".join(self.pieces), lengths)  # type: ignore[arg-type]


def _column(rows: list[int], texts: list[str] | _JsonTexts) -> tuple[list[int], list[Any], int]:
    """Parse one key's JSON values in one go; items that are not JSON are dropped. Plain
    numbers come back as one float64 array."""
    if isinstance(texts, _JsonTexts):
        numbers = texts.numbers()
        if numbers is not None:
            return rows, numbers, 0  # type: ignore[return-value]
    try:
        joined = texts.joined() if isinstance(texts, _JsonTexts) else ",".join(texts)
        values = _loads("[" + joined + "]")
        if len(values) == len(rows):
            return rows, values, 0
    except ValueError:
        pass
    keep_rows, values, bad = [], [], 0
    for r, t in zip(rows, texts):
        try:
            values.append(_loads(t))
            keep_rows.append(r)
        except ValueError:
            bad += 1
    return keep_rows, values, bad


_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[list(b"0123456789.eE+-")] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[list(b"0123456789")] = True


def _json_numbers(data: bytes, lengths: np.ndarray) -> np.ndarray | None:
    """The JSON numbers in ``data`` (back to back, ``lengths`` bytes each) as float64, as
    ``float(json.loads(x))`` would give them; None when one is not a plain JSON number.

    Arrow's parser (correctly rounded, like Python's) reads them; it also takes "+1", ".5",
    "1.", "1.e5", "-.5", "01", which JSON does not, so those are looked for first, and it
    reads the JSON integer -0 as -0.0 where Python has 0."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(lengths)
    if not count:
        return np.zeros(0, dtype=np.float64)
    d = np.frombuffer(data, dtype=np.uint8)
    if (lengths <= 0).any() or not _NUMBER_BYTES[d].all():
        return None
    ends = np.cumsum(lengths, dtype=np.int64)
    starts = ends - lengths
    first = starts + (d[starts] == 0x2D)  # after an optional minus
    if (first >= ends).any() or not _DIGIT[d[first]].all():
        return None
    zero = np.flatnonzero((d[first] == 0x30) & (first + 1 < ends))
    if len(zero) and _DIGIT[d[first[zero] + 1]].any():
        return None  # a leading zero
    dots = np.flatnonzero(d == 0x2E)
    if len(dots):  # each between two digits of its own number
        is_start = np.zeros(len(d) + 1, dtype=bool)
        is_start[starts] = True
        is_start[-1] = True
        if is_start[dots].any() or is_start[dots + 1].any():
            return None
        if not (_DIGIT[d[dots - 1]].all() and _DIGIT[d[dots + 1]].all()):
            return None
    offsets = np.concatenate([[0], ends]).astype(np.int64)
    try:
        strings = pa.Array.from_buffers(pa.large_string(), count,
                                        [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        values = pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    values = np.array(values, dtype=np.float64)  # writable
    for i in np.flatnonzero((values == 0) & np.signbit(values)).tolist():
        if not any(c in data[starts[i] : ends[i]] for c in b".eE"):
            values[i] = 0.0  # the integer -0
    return values


class _Odd(Exception):
    """A history or summary record the bulk reader does not take: read record by record."""


def _varints(u8: np.ndarray, pos: np.ndarray, max_bytes: int
             ) -> tuple[np.ndarray, np.ndarray | int]:
    """Varints at ``pos`` (value, byte count); _Odd if one is longer than ``max_bytes``."""
    first = u8[pos]
    if not len(first) or first.max() < 0x80:  # all one byte long: the common case
        return first.astype(np.int64), 1
    value, length = varint(u8, pos)
    if len(length) and not ((length > 0) & (length <= max_bytes)).all():
        raise _Odd
    return value, length


def _check(ok: np.ndarray) -> None:
    if not ok.all():
        raise _Odd


def _parse_batch(b: Buffer, starts: np.ndarray, ends: np.ndarray) -> dict[str, np.ndarray]:
    """The history and summary records of a batch, field by field across the batch.

    Returns the kind of each record (0 other, 1 history, 2 summary), its items in (record,
    position) order (record, key start and end, value start and end) and the history steps
    (record, num); raises _Odd for a history or summary record in another layout."""
    u8 = b.u8
    size = b.size
    p = starts.copy()
    has_num = (p < ends) & (u8[np.minimum(p, size)] == 0x08)
    _num, num_len = varint(u8, p + 1)
    p = np.where(has_num, p + 1 + num_len, p)
    inside = p < ends
    tag = u8[np.minimum(p, size)]
    hist = inside & (tag == 0x12)
    summ = inside & (tag == 0x1A)
    ours = np.flatnonzero(hist | summ)
    kind = hist.astype(np.int8) + 2 * summ.astype(np.int8)
    out = {"kind": kind}
    _check((num_len[ours] > 0) & (num_len[ours] <= 9) | ~has_num[ours])
    length, n = _varints(u8, p[ours] + 1, 5)
    cur = p[ours] + 1 + n
    end = cur + length
    _check(end == ends[ours])
    is_hist = hist[ours]
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("rec", "k0", "k1", "v0", "v1", "at")}
    step_rec: list[np.ndarray] = []
    step_num: list[np.ndarray] = []
    act = np.flatnonzero(cur < end)
    position = 0
    while len(act):
        at = cur[act]
        t = u8[at]
        item = t == 0x0A
        step = (t == 0x12) & is_hist[act]
        _check(item | step)
        # Items: key fields (key = 1, nested_key = 2), then value_json (16), then nothing.
        ia, ic = act[item], at[item]
        length, n = _varints(u8, ic + 1, 5)
        i0 = ic + 1 + n
        i1 = i0 + length
        _check(i1 <= end[ia])
        q = i0.copy()
        kact = np.arange(len(ia))
        while len(kact):
            qq = q[kact]
            kt = u8[qq]
            kact = kact[((kt == 0x0A) | (kt == 0x12)) & (qq < i1[kact])]
            if not len(kact):
                break
            qq = q[kact]
            length, n = _varints(u8, qq + 1, 5)
            q[kact] = qq + 1 + n + length
            _check(q[kact] <= i1[kact])
        _check((q + 2 <= i1) & (u8[q] == 0x82) & (u8[q + 1] == 0x01))
        length, n = _varints(u8, q + 2, 5)
        v0 = q + 2 + n
        v1 = v0 + length
        _check(v1 == i1)
        parts["rec"].append(ours[ia])
        parts["k0"].append(i0)
        parts["k1"].append(q)
        parts["v0"].append(v0)
        parts["v1"].append(v1)
        parts["at"].append(np.full(len(ia), position))
        position += 1
        cur[ia] = i1
        # The step: HistoryStep{num = 1}, the record's last field.
        sa, sc = act[step], at[step]
        if len(sa):
            length, n = _varints(u8, sc + 1, 5)
            s0 = sc + 1 + n
            s1 = s0 + length
            _check(s1 == end[sa])
            num, n = varint(u8, s0 + 1)
            empty = length == 0
            _check(empty | ((u8[s0] == 0x08) & (n > 0) & (n <= 9) & (s0 + 1 + n == s1)))
            step_rec.append(ours[sa])
            step_num.append(np.where(empty, 0, num))
            cur[sa] = s1
        act = act[cur[act] < end[act]]
    found = {k: np.concatenate(a) if a else np.zeros(0, dtype=np.int64) for k, a in parts.items()}
    # Items were found position by position: put them in (record, position) order.
    count = np.bincount(found["rec"], minlength=len(starts))
    dest = (np.cumsum(count) - count)[found["rec"]] + found["at"]
    for key in ("rec", "k0", "k1", "v0", "v1"):
        out[key] = np.empty_like(found[key])
        out[key][dest] = found[key]
    out["step_rec"] = np.concatenate(step_rec) if step_rec else np.zeros(0, dtype=np.int64)
    out["step_num"] = np.concatenate(step_num) if step_num else np.zeros(0, dtype=np.int64)
    return out


def _read_in_bulk(b: Buffer, log: _RunLog, pb: Any, decode_error: type[Exception]
                  ) -> _RunLog | None:
    """``read_wandb_log`` in bulk; None when the file needs reading record by record."""
    keys: dict[tuple[int, int], tuple[str, bytes]] = {}  # (kind, key-bytes hash) -> key
    texts: dict[str, _JsonTexts] = {}
    unreadable = 0
    parse = pb.Record.FromString
    item_types = {1: pb.HistoryItem.FromString, 2: pb.SummaryItem.FromString}
    try:
        for buf, starts, ends in _batches(b, log):
            data = buf.data
            got = _parse_batch(buf, starts, ends)
            kind = got["kind"]
            for r in np.flatnonzero(kind == 0).tolist():  # run, config, metric, stats, ...
                try:
                    rec = parse(data[starts[r] : ends[r]])
                except decode_error:
                    unreadable += 1
                    continue
                other = rec.WhichOneof("record_type")
                if other in ("history", "summary"):
                    raise _Odd
                _apply_record(log, rec, other)
            _take_items(log, buf, data, got, keys, texts, item_types, decode_error)
    except _Odd:
        return None
    for key, col in texts.items():
        log.columns[key] = (np.concatenate(col.rows), col)  # type: ignore[assignment]
    if unreadable:
        log.notes.append(f"{plural(unreadable, 'unreadable record')} skipped")
    return log


def _batches(b: Buffer, log: _RunLog) -> Iterator[tuple[Buffer, np.ndarray, np.ndarray]]:
    """The log's records, ``_BULK_BATCH`` at a time: (buffer, starts, ends)."""
    spans = _clean_log_spans(b)
    if spans is not None:
        buf, starts, ends = spans
        for a in range(0, len(starts), _BULK_BATCH):
            yield buf, starts[a : a + _BULK_BATCH], ends[a : a + _BULK_BATCH]
        return
    records = iter_log_records(b.data, log.notes)
    while True:
        batch = list(itertools.islice(records, _BULK_BATCH))
        if not batch:
            return
        lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
        ends = np.cumsum(lengths)
        joined = b"".join(batch)
        del batch
        yield Buffer(bytearray(joined) + bytes(Buffer._PAD), len(joined)), ends - lengths, ends


def _gather_joined(b: Buffer, starts: np.ndarray, lengths: np.ndarray,
                   sep: int | None = 0x2C) -> np.ndarray:
    """The byte strings ``[start, start + length)`` of the buffer, each followed by ``sep``
    (unless None), one after the other, as a uint8 array.

    Short strings (numbers) are gathered as fixed-width rows, one gather each, and packed
    with a mask; numpy would gather them byte by byte otherwise."""
    count = len(lengths)
    extra = 0 if sep is None else 1
    if not count:
        return np.zeros(0, dtype=np.uint8)
    width = int(lengths.max()) + extra
    if width <= Buffer._PAD:
        rows = np.ndarray((len(b.padded) - width + 1,), dtype=np.dtype((np.void, width)),
                          buffer=b.padded, strides=(1,))
        m = rows[starts].view(np.uint8).reshape(count, width)
        if sep is not None:
            m[np.arange(count), lengths] = sep
        return m[np.arange(width) < (lengths + extra)[:, None]]
    total = int(lengths.sum())
    out = np.full(total + extra * count, 0x2C if sep is None else sep, dtype=np.uint8)
    if total:
        packed = np.cumsum(lengths + extra) - lengths - extra  # each string's start in out
        k = np.arange(total, dtype=np.int64)
        base = np.repeat(np.arange(count, dtype=np.int64), lengths)
        within = k - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[packed[base] + within] = b.u8[starts[base] + within]
    return out


def _has_high_byte(b: Buffer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether each byte string ``[start, start + length)`` holds a byte >= 0x80."""
    out = np.zeros(len(starts), dtype=bool)
    short = lengths <= Buffer._PAD
    if short.any():  # one gather per string, as a row
        width = int(lengths[short].max(initial=1))
        rows = np.ndarray((len(b.padded) - width + 1,), dtype=np.dtype((np.void, width)),
                          buffer=b.padded, strides=(1,))
        m = rows[starts[short]].view(np.uint8).reshape(-1, width)
        out[short] = ((m >= 0x80) & (np.arange(width) < lengths[short][:, None])).any(axis=1)
    for j in np.flatnonzero(~short).tolist():
        s = int(starts[j])
        out[j] = bool((b.u8[s : s + int(lengths[j])] >= 0x80).any())
    return out


def _take_items(log: _RunLog, b: Buffer, joined: memoryview, got: dict[str, np.ndarray],
                keys: dict[tuple[int, int], tuple[str, bytes]], texts: dict[str, _JsonTexts],
                item_types: dict[int, Any], decode_error: type[Exception]) -> None:
    import pandas as pd

    kind = got["kind"]
    rec, k0, k1, v0, v1 = got["rec"], got["k0"], got["k1"], got["v0"], got["v1"]
    item_kind = kind[rec]
    klen = k1 - k0
    if len(klen) and klen.max() > _MAX_KEY_BYTES:
        raise _Odd
    # Each distinct key's bytes are parsed once; every item is checked byte for byte against
    # the first item of its hash in the batch, and that one against the bytes seen before.
    width = -(-int(klen.max()) // 8) * 8 if len(klen) else 0
    key_rows = gather_rows(b, k0, width)  # each key's bytes in one gather, as aligned words
    words = [key_rows[:, j] & WORD_MASKS[np.clip(klen - 8 * j, 0, 8)]
             for j in range(width // 8)]
    del key_rows
    h = klen.astype(np.uint64) * HASH_KEYS[-1] + item_kind.astype(np.uint64)
    for j, word in enumerate(words):
        h += word * HASH_KEYS[j]
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x9E3779B97F4A7C15)
    inverse, uniq = pd.factorize(h)  # hashing, not sorting: ids in the order first seen
    first = np.full(len(uniq), len(h), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(h)))
    ref = first[inverse]
    same = (klen == klen[ref]) & (item_kind == item_kind[ref])
    for word in words:
        same &= word == word[ref]
    _check(same)
    names: list[str] = []
    for hv, f in zip(uniq.tolist(), first.tolist()):
        kb = bytes(joined[k0[f] : k1[f]])
        k = int(item_kind[f])
        known = keys.get((k, hv))
        if known is None:
            try:
                item = item_types[k](kb)
            except decode_error:
                raise _Odd from None
            if k == 1:
                name = "/".join(item.nested_key) if item.nested_key else item.key
            else:
                name = item.key or "/".join(item.nested_key)
            known = keys[(k, hv)] = (name, kb)
        elif known[1] != kb:
            raise _Odd
        names.append(known[0])
    ids = {n: i for i, n in enumerate(dict.fromkeys(names))}
    key_id = np.array([ids[n] for n in names], dtype=np.int64)[inverse]
    id_names = list(ids)

    # History: rows in record order, values per key as one JSON text.
    hist = kind == 1
    row_of = np.cumsum(hist) - 1 + log.n_rows
    mine = np.flatnonzero(item_kind == 1)
    small = key_id[mine].astype(np.int16 if len(id_names) < 2**15 else np.int64)
    order = mine[np.argsort(small, kind="stable")]  # radix sort for int16
    lengths = v1[order] - v0[order]
    text = _gather_joined(b, v0[order], lengths, None).tobytes()  # values back to back
    cut = np.cumsum(lengths)  # each value's end in ``text``
    bounds = np.flatnonzero(np.diff(key_id[order])) + 1
    segments = list(zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)]))
    segments = segments if len(order) else []
    segments.sort(key=lambda se: int(order[se[0]]))  # keys in the order first logged
    for a, z in segments:
        name = id_names[int(key_id[order[a]])]
        x = int(cut[a - 1]) if a else 0
        raw = text[x : int(cut[z - 1])]
        value_lengths = lengths[a:z].astype(np.int32)
        if not raw.isascii():  # kept as text, comma-joined, lengths in characters
            ends = (cut[a:z] - x).tolist()
            try:
                values = [raw[p:q].decode("utf-8") for p, q in zip([0, *ends[:-1]], ends)]
            except UnicodeDecodeError:
                raise _Odd from None
            raw = ",".join(values)  # type: ignore[assignment]
            value_lengths = np.array([len(v) for v in values], dtype=np.int32)
        if name not in log.columns:
            log.columns[name] = ([], [])  # the rows and texts are set at the end
            texts[name] = _JsonTexts()
        texts[name].add(raw, value_lengths, row_of[rec[order[a:z]]])
    step_rec = got["step_rec"]
    if len(step_rec):
        by_row = np.argsort(step_rec, kind="stable")
        log.step_num.update(zip(row_of[step_rec[by_row]].tolist(),
                                got["step_num"][by_row].tolist()))
    log.n_rows += int(hist.sum())

    # Summary: keys in the order first logged, each with its last value.
    mine = np.flatnonzero(item_kind == 2)
    if len(mine):
        # protobuf would refuse a whole record over a value that is not UTF-8: check them all
        # (those holding a byte >= 0x80, found by the largest byte of each value).
        a, z = v0[mine], v1[mine]
        for j in np.flatnonzero(_has_high_byte(b, a, z - a)).tolist():
            try:
                bytes(joined[int(a[j]) : int(z[j])]).decode("utf-8")
            except UnicodeDecodeError:
                raise _Odd from None
        ids_in = key_id[mine]
        at = np.arange(len(ids_in))
        first_at = np.full(len(id_names), len(ids_in), dtype=np.int64)
        last_at = np.full(len(id_names), -1, dtype=np.int64)
        np.minimum.at(first_at, ids_in, at)
        np.maximum.at(last_at, ids_in, at)
        summary = log.summary
        for _first, li in sorted(zip(first_at.tolist(), last_at.tolist())):
            if li < 0:
                continue  # a history key only
            j = mine[li]
            summary[id_names[int(key_id[j])]] = bytes(joined[v0[j] : v1[j]]).decode("utf-8")
