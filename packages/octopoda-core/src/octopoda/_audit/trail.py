"""Verification of an agent's audit chain, in the store or in an exported bundle.

``verify`` recomputes every event's hash from its stored fields (see ``octopoda._audit.chain``
for the exact format), checks that seqs run 1..N without gaps and that each event names its
predecessor's hash, compares the last event with the head the store keeps, and optionally
with a head the caller kept elsewhere (``expected_head``). It also checks that the memory
rows are exactly the writes the events recorded (``check_memories``). An erased row has
lost its value, so its digest cannot be checked: it must be listed by a later event's
``erased`` entries (an ``erase`` event), and every version such an entry lists must be
erased.

Audit bundle format (``format_version`` 1), self-contained and verifiable offline::

    {"format": "octopoda.audit", "format_version": 1, "agent": "bot",
     "head": {"seq": 3, "hash": "..."},
     "events": [{"seq": 1, "time": 1764440000.5, "kind": "remember",
                 "payload": {...}, "prev_hash": "000...", "hash": "..."}, ...],
     "signatures": [{"seq": 3, "hash": "...", "public_key": "<hex>", "signature": "<hex>"}]}

Each event's hash is recomputed from ``canonical_json(payload)``.
"""

import contextlib
import hashlib
import json
import math
import time as _time
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring
from typing import Any, Final, NamedTuple

from .._canonical import canonical_text, format_number
from .._errors import AuditChainBroken, DamagedRow, InvalidBundle, InvalidInput, OctopodaError
from .._store import Store, StoredRow, agent_namespace, stored_sha256
from .._values import MAX_DEPTH, check_depth
from .._version import __version__
from .chain import GENESIS_HASH, chain_hasher
from .side import SIDE_KINDS, SideLedger
from .signing import SignedHead, public_key_hex, sign, signature_valid

__all__ = ["AuditTrail", "ChainHead", "VerifyReport", "verify_audit_bundle"]

AUDIT_FORMAT: Final = "octopoda.audit"
AUDIT_VERSION: Final = 1


class ChainHead(NamedTuple):
    """The last link of an agent's chain: keep it elsewhere to detect rewrites later."""

    seq: int
    hash: str


class VerifyReport(NamedTuple):
    """The result of a verification. ``first_bad_seq`` and ``reason`` are set when not ok."""

    agent: str
    ok: bool
    checked: int
    head: ChainHead
    first_bad_seq: int | None = None
    reason: str | None = None
    memories_checked: int = 0
    side_rows_checked: int = 0  # rows outside memory (messages, snapshots, ...) compared

    def __bool__(self) -> bool:
        return self.ok

    def raise_for_status(self) -> "VerifyReport":
        """Raise :class:`AuditChainBroken` unless the chain verified."""
        if not self.ok:
            raise AuditChainBroken(
                f"the audit chain of agent {self.agent!r} is broken at seq"
                f" {self.first_bad_seq}: {self.reason}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return {**self._asdict(), "head": self.head._asdict()}


_WRONG_TYPES: Final = "the event's columns are not of their types (changed by hand)"


def _well_typed(time: Any, kind: Any, payload_text: Any) -> bool:
    """Whether an event's columns have the types the chain format hashes."""
    if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time):
        return False
    return type(kind) is str and type(payload_text) is str


class _Walk:
    """Walks chain links in order and remembers the first failure.

    ``checkpoints`` are ``(seq, hash, what)`` the chain must contain: an expected head the
    caller kept, or signed heads.
    """

    def __init__(self, agent: str, checkpoints: list[tuple[int, str, str]]) -> None:
        self.agent = agent
        self.prev = GENESIS_HASH
        self.seq = 0
        self.bad: tuple[int, str] | None = None
        self.checkpoints = checkpoints
        self._wanted = {seq for seq, _, _ in checkpoints}
        self._seen: dict[int, str] = {}
        self._hash = chain_hasher(agent)

    def step(self, seq: int, time: float, kind: str, payload_text: str, prev: str, h: str) -> bool:
        if type(seq) is not int:
            return self.fail(self.seq + 1, f"the event after seq {self.seq} has no integer seq")
        if seq != self.seq + 1:
            if seq <= self.seq:
                return self.fail(seq, f"event seq {seq} is out of order after seq {self.seq}")
            return self.fail(self.seq + 1, f"event seq {self.seq + 1} is missing (next is {seq})")
        if not _well_typed(time, kind, payload_text):
            return self.fail(seq, _WRONG_TYPES)
        if prev != self.prev:
            return self.fail(seq, "prev_hash does not match the previous event's hash")
        if self._hash(kind, payload_text, prev, seq, time) != h:
            return self.fail(seq, "the stored hash does not match the event's content")
        self.prev, self.seq = h, seq
        if seq in self._wanted:
            self._seen[seq] = h
        return True

    def walk_rows(
        self,
        rows: Iterable[tuple[Any, ...]],
        collect: Callable[[int, float, str, str], bool] | None = None,
    ) -> None:
        """``step`` over raw chain rows ``(seq, time, kind, payload_text, prev, hash)``
        in one tight loop (verifying 100,000s of events is mostly this loop): a row that does
        not link cleanly goes through ``step``, which records why. ``collect(seq, time, kind,
        payload_text)`` sees every verified row; it returns False (having recorded why) to
        stop at a row it cannot read."""
        try:
            self._walk_rows(rows, collect)
        except (TypeError, ValueError, OverflowError):  # a column of another type
            self.fail(self.seq + 1, _WRONG_TYPES)

    def _walk_rows(
        self,
        rows: Iterable[tuple[Any, ...]],
        collect: Callable[[int, float, str, str], bool] | None,
    ) -> None:
        sha256 = hashlib.sha256
        agent_json = encode_basestring(self.agent)
        kinds: dict[str, str] = {}
        wanted, seen = self._wanted, self._seen
        prev, expect = self.prev, self.seq + 1
        prev_bytes = bytes.fromhex(prev)
        try:
            for seq, time, kind, text, stored_prev, h in rows:
                if seq != expect or stored_prev != prev:
                    break
                kind_json = kinds.get(kind)
                if kind_json is None:
                    kind_json = kinds[kind] = encode_basestring(kind)
                number = repr(time) if type(time) is float else ""
                if not number or "e" in number or "n" in number or number.endswith(".0"):
                    number = format_number(time)
                body = (
                    f'{{"agent":{agent_json},"kind":{kind_json},"payload":{text},'
                    f'"prev_hash":"{prev}","seq":{seq},"time":{number}}}'
                )
                digest = sha256(prev_bytes + body.encode("utf-8")).digest()
                if digest.hex() != h:
                    break
                if wanted and seq in wanted:
                    seen[seq] = h
                if collect is not None and not collect(seq, time, kind, text):
                    return  # (collect recorded why)
                prev, prev_bytes, expect = h, digest, seq + 1
            else:
                return
        finally:
            self.prev, self.seq = prev, expect - 1
        self.step(seq, time, kind, text, stored_prev, h)  # records why this row is bad

    def fail(self, seq: int, reason: str) -> bool:
        if self.bad is None:
            self.bad = (seq, reason)
        return False

    def finish(self, stored_head: ChainHead | None) -> None:
        if self.bad is not None:
            return
        if stored_head is not None and (stored_head.seq, stored_head.hash) != (self.seq, self.prev):
            self.fail(
                min(stored_head.seq, self.seq + 1),
                f"the stored head (seq {stored_head.seq}) does not match the last event"
                f" (seq {self.seq}): events were removed or the head was changed",
            )
            return
        for seq, h, what in sorted(self.checkpoints):
            if seq > self.seq:
                self.fail(
                    self.seq + 1,
                    f"the chain ends at seq {self.seq}, before the {what} at seq {seq}:"
                    " it was truncated",
                )
            elif seq > 0 and self._seen.get(seq) != h:
                self.fail(
                    seq, f"the event at seq {seq} differs from the {what}: the chain was rewritten"
                )
            if self.bad is not None:
                return

    def report(
        self, head: ChainHead, memories_checked: int = 0, side_rows_checked: int = 0
    ) -> VerifyReport:
        seq, reason = self.bad if self.bad is not None else (None, None)
        return VerifyReport(
            self.agent,
            self.bad is None,
            self.seq,
            head,
            seq,
            reason,
            memories_checked,
            side_rows_checked,
        )


def _checkpoints(
    agent: str,
    expected_head: Any,
    public_key: Any,
    signed: list[SignedHead],
) -> tuple[list[tuple[int, str, str]], tuple[int, str] | None]:
    """Checkpoints for a walk, and a failure found before walking (a bad signature)."""
    points: list[tuple[int, str, str]] = []
    expected = _as_head(expected_head)
    if expected is not None:
        points.append((expected.seq, expected.hash, "expected head"))
    if public_key is None:
        return points, None
    key = public_key_hex(public_key)
    mine = [h for h in signed if h.public_key == key and h.agent == agent]
    if not mine:
        return points, (0, "no head of this agent is signed with the given public key")
    for head in mine:
        if not signature_valid(head):
            return points, (
                head.seq,
                f"the signature of the signed head at seq {head.seq} is invalid",
            )
        points.append((head.seq, head.hash, "signed head"))
    return points, None


_loads = json.loads


def _note_writes(
    payload: dict[str, Any],
    seq: int,
    time: float,
    recorded: dict[tuple[str, int], tuple[int, float, dict[str, Any]]],
    elsewhere: list[tuple[int, float, dict[str, Any]]],
) -> None:
    """Record an event's ``writes`` entries: in the agent's memory by (key, version), the
    rest (shared spaces, its goal) in order."""
    writes = payload.get("writes", ())
    if not isinstance(writes, (list, tuple)):
        raise TypeError("writes is not a list")
    for entry in writes:
        if type(entry) is not dict:
            raise TypeError("a writes entry is not an object")
        if "namespace" not in entry:
            recorded[(entry["key"], entry["version"])] = (seq, time, entry)
        else:
            elsewhere.append((seq, time, entry))


def _note_erasures(payload: dict[str, Any], seq: int, erasures: dict[tuple[str, int], int]) -> None:
    """Record the versions an event's ``erased`` entries list: ``(key, version) -> seq``."""
    entries = payload.get("erased")
    for entry in entries if isinstance(entries, list) else ():
        versions = entry.get("versions") if isinstance(entry, dict) else None
        for version in versions if isinstance(versions, list) else ():
            erasures.setdefault((str(entry.get("key")), version), seq)


class AuditTrail:
    """``agent.audit``: the agent's hash-chained event log."""

    def __init__(self, store: Store, agent: str) -> None:
        self._store = store
        self._agent = agent

    def head(self) -> ChainHead:
        """The stored head (seq, hash); seq 0 and the genesis hash before the first event."""
        row = self._store.agent(self._agent)
        return ChainHead(0, GENESIS_HASH) if row is None else ChainHead(row.head_seq, row.head_hash)

    def verify(
        self,
        expected_head: ChainHead | tuple[int, str] | None = None,
        *,
        check_memories: bool = True,
        public_key: Any = None,
    ) -> VerifyReport:
        """Recompute the chain; see the module docstring for what is checked.

        ``expected_head``: a head kept elsewhere; the chain must still contain it.
        ``public_key``: every head signed with it must be validly signed and in the chain
        (needs the ``[sign]`` extra). Everything is read in one snapshot of the store where
        it offers one (``read_snapshot``), so a writer meanwhile cannot look like tampering.
        """
        snapshot = getattr(self._store, "read_snapshot", None)
        with contextlib.nullcontext() if snapshot is None else snapshot():
            return self._verify(expected_head, check_memories, public_key)

    def _verify(self, expected_head: Any, check_memories: bool, public_key: Any) -> VerifyReport:
        points, early = _checkpoints(
            self._agent, expected_head, public_key, self.signed_heads() if public_key else []
        )
        walk = _Walk(self._agent, points)
        if early is not None:
            walk.fail(*early)
            return walk.report(self.head())
        recorded: dict[tuple[str, int], tuple[int, float, dict[str, Any]]] = {}
        elsewhere: list[tuple[int, float, dict[str, Any]]] = []
        erasures: dict[tuple[str, int], int] = {}
        side = SideLedger(self._agent)
        side_kinds = SIDE_KINDS

        def collect(seq: int, time: float, kind: str, payload_text: str) -> bool:
            try:
                payload = _loads(payload_text)
                if type(payload) is not dict:
                    return walk.fail(seq, "the event's payload is not a JSON object")
                _note_writes(payload, seq, time, recorded, elsewhere)
                _note_erasures(payload, seq, erasures)
                if kind in side_kinds or "conflict_id" in payload_text:
                    side.note(seq, time, kind, payload)
            except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
                return walk.fail(seq, "the event's payload is not a valid Octopoda payload")
            return True

        walk.walk_rows(self._store.chain_rows(self._agent), collect if check_memories else None)
        head = self._stored_head(walk)
        walk.finish(head)
        checked_rows = side_rows = 0
        try:
            if check_memories and walk.bad is None:
                checked_rows = self._check_memories(walk, recorded, erasures)
            if check_memories and walk.bad is None:
                checked_rows += self._check_elsewhere(walk, elsewhere)
            if check_memories and walk.bad is None:
                side_rows = self._check_side(walk, side)
        except DamagedRow as exc:  # a row whose columns cannot be read back
            reason = f"memory {exc.key!r} v{exc.version} differs from its audited write: {exc.why}"
            walk.fail(exc.seq if type(exc.seq) is int else 0, reason)
        return walk.report(head or ChainHead(walk.seq, walk.prev), checked_rows, side_rows)

    def _check_side(self, walk: _Walk, side: SideLedger) -> int:
        """The rows outside memory against what the events say (``octopoda._audit.side``):
        the number of rows compared."""
        try:
            problem, checked = side.check(self._store, self._store.agent(self._agent))
        except OctopodaError as exc:  # a side row the store cannot read back
            walk.fail(walk.seq, f"a row outside memory cannot be read: {exc}")
            return 0
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            walk.fail(walk.seq, "a row outside memory is not of its types")
            return 0
        if problem is not None:
            walk.fail(*problem)
        return checked

    def _stored_head(self, walk: _Walk) -> ChainHead | None:
        """The stored head, for ``walk.finish``; a missing or damaged one fails the walk
        (None: nothing to compare with)."""
        try:
            row = self._store.agent(self._agent)
        except AuditChainBroken as exc:  # the agents row is damaged
            walk.fail(walk.seq + 1, str(exc).partition(". ")[0])
            return None
        if row is None:
            if walk.seq > 0:
                walk.fail(1, "the agent's stored head is missing although it has events")
            return ChainHead(0, GENESIS_HASH)
        return ChainHead(row.head_seq, row.head_hash)

    def _check_elsewhere(self, walk: _Walk, writes: list[tuple[int, float, dict[str, Any]]]) -> int:
        """This agent's writes outside its own memory (shared spaces, its goal): each row
        must still be there as the event recorded it, with this agent as its author."""
        for seq, time, entry in writes:
            row = self._store.version(entry["namespace"], entry["key"], entry["version"])
            where = f"{entry['namespace']} {entry['key']!r} v{entry['version']}"
            if row is None:
                walk.fail(seq, f"{where} was written (seq {seq}) but its row is gone")
                return 0
            stored = (
                row.seq,
                row.author,
                row.encoding,
                list(row.tags),
                row.expires_at,
                row.created_at,
                row.kind,
            )
            claimed = (
                seq,
                self._agent,
                entry.get("encoding"),
                entry.get("tags", []),
                entry.get("expires_at"),
                entry.get("created_at", time),
                entry.get("kind"),
            )
            if stored != claimed or row.erased or stored_sha256(row) != entry.get("sha256"):
                walk.fail(seq, f"{where} differs from its audited write")
                return 0
        return len(writes)

    def sign_head(self, private_key: Any) -> SignedHead:
        """Sign the current head with an Ed25519 key you hold and store the signature
        (``[sign]`` extra). Keep the public key: ``verify(public_key=...)`` checks it."""
        head = self.head()
        if head.seq == 0:
            raise InvalidInput(f"agent {self._agent!r} has no events yet; there is no head to sign")
        signed = sign(private_key, self._agent, head.seq, head.hash, round(_time.time(), 6))
        self._store.put_signed_head(signed)
        return signed

    def signed_heads(self) -> list[SignedHead]:
        """Signed heads stored for this agent, oldest first."""
        return self._store.signed_heads(self._agent)

    def _check_memories(
        self,
        walk: _Walk,
        recorded: dict[tuple[str, int], tuple[int, float, dict[str, Any]]],
        erasures: dict[tuple[str, int], int],
    ) -> int:
        checked = 0
        for row in self._store.all_versions(agent_namespace(self._agent)):
            checked += 1
            found = recorded.pop((row.key, row.version), None)
            problem = _row_problem(
                row, found, erasures.pop((row.key, row.version), None), self._agent
            )
            if problem is not None:
                walk.fail(*problem)
                return checked
        if recorded:
            (key, version), (seq, _, _) = min(recorded.items(), key=lambda kv: kv[1][0])
            walk.fail(seq, f"memory {key!r} v{version} was written (seq {seq}) but its row is gone")
        elif erasures:
            (key, version), seq = min(erasures.items(), key=lambda kv: kv[1])
            walk.fail(seq, f"erase event {seq} lists {key!r} v{version}, which has no row")
        return checked

    def export(self) -> dict[str, Any]:
        """A self-contained bundle of every event and the head, for offline verification."""
        return {
            "format": AUDIT_FORMAT,
            "format_version": AUDIT_VERSION,
            "agent": self._agent,
            "octopoda_version": __version__,
            "head": {"seq": (h := self.head()).seq, "hash": h.hash},
            "events": [
                {
                    "seq": e.seq,
                    "time": e.time,
                    "kind": e.kind,
                    "payload": e.payload,
                    "prev_hash": e.prev_hash,
                    "hash": e.hash,
                }
                for e in self._store.events(self._agent)
            ],
            "signatures": [h.to_dict() for h in self.signed_heads()],
        }


def _row_problem(
    row: StoredRow,
    found: tuple[int, float, dict[str, Any]] | None,
    erased_at: int | None,
    agent: str,
) -> tuple[int, str] | None:
    """Why a row of the agent's memory does not match its audited write (and erasure):
    the seq to report and the reason, or None."""
    where = f"memory {row.key!r} v{row.version}"
    if found is None or found[0] != row.seq:
        return row.seq, f"{where} has no matching write event"
    _, time, entry = found
    stored = (row.encoding, list(row.tags), row.expires_at, row.created_at, row.author, row.kind)
    claimed = (
        entry.get("encoding"),
        entry.get("tags", []),
        entry.get("expires_at"),
        entry.get("created_at", time),
        agent,
        entry.get("kind"),
    )
    if row.erased:  # the value is gone: everything but its digest is still checked
        if erased_at is None or erased_at <= row.seq:
            return row.seq, f"{where} was erased without an erase event"
        if stored != claimed or row.data is not None:
            return row.seq, f"{where} differs from its audited write"
        return None
    if erased_at is not None:
        return erased_at, (
            f"erase event {erased_at} lists {row.key!r} v{row.version} but its value is"
            " still stored"
        )
    if stored != claimed or stored_sha256(row) != entry.get("sha256"):
        return row.seq, f"{where} differs from its audited write"
    return None


_HEAD_FORMS: Final = (
    "a ChainHead (from audit.head()), a (seq, hash) pair or {'seq': ..., 'hash': ...}"
    " with seq an int >= 0 and hash 64 hex digits"
)


def _as_head(value: ChainHead | tuple[int, str] | dict[str, Any] | None) -> ChainHead | None:
    """A head as ``verify(expected_head=)`` and bundles give it, else :class:`InvalidInput`."""
    if value is None:
        return None
    if isinstance(value, dict) and set(value) >= {"seq", "hash"}:
        seq, h = value["seq"], value["hash"]
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        seq, h = value
    else:
        raise InvalidInput(f"expected_head must be {_HEAD_FORMS}, not {value!r:.80}")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 2**63:
        raise InvalidInput(f"expected_head's seq must be an int >= 0, not {seq!r:.40}")
    if isinstance(h, str):
        h = h.lower()
    if not isinstance(h, str) or len(h) != 64 or not set(h) <= _HEX:
        raise InvalidInput(f"expected_head's hash must be 64 hex digits, not {h!r:.80}")
    return ChainHead(seq, h)


_HEX: Final = frozenset("0123456789abcdef")


def _bundle_events(bundle: dict[str, Any]) -> Iterator[tuple[int, float, str, str, str, str]]:
    events = bundle.get("events")
    if not isinstance(events, list):
        raise InvalidBundle("the audit bundle has no 'events' list")
    for i, e in enumerate(events):
        try:
            seq, time = e["seq"], e["time"]
            if type(seq) is not int:
                raise TypeError(f"seq {seq!r} is not an integer")
            if isinstance(time, bool) or not isinstance(time, (int, float)):
                raise TypeError(f"time {time!r} is not a number")
            payload_text = canonical_text(e["payload"])
            check_depth(e["payload"], payload_text, "its payload", MAX_DEPTH + 4)
            yield (seq, time, str(e["kind"]), payload_text, str(e["prev_hash"]), str(e["hash"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidBundle(f"events[{i}] is malformed: {exc!r}") from None


def verify_audit_bundle(
    bundle: dict[str, Any] | str | bytes,
    expected_head: ChainHead | tuple[int, str] | None = None,
    *,
    public_key: Any = None,
) -> VerifyReport:
    """Verify an exported audit bundle without any database."""
    if isinstance(bundle, (str, bytes)):
        try:
            bundle = json.loads(bundle)
        except (ValueError, RecursionError) as exc:
            raise InvalidBundle(f"the audit bundle is not valid JSON: {exc}") from None
    if not isinstance(bundle, dict) or bundle.get("format") != AUDIT_FORMAT:
        raise InvalidBundle("not an Octopoda audit bundle; pass what `audit.export()` returned")
    if bundle.get("format_version") != AUDIT_VERSION:
        raise InvalidBundle(
            f"audit bundle format_version {bundle.get('format_version')!r} is unknown"
        )
    agent = bundle.get("agent")
    if not isinstance(agent, str):
        raise InvalidBundle("the audit bundle names no agent")
    try:
        head = _as_head(bundle["head"])
        signed = [SignedHead(**item) for item in bundle.get("signatures") or []]
    except (KeyError, TypeError, ValueError):
        raise InvalidBundle("the audit bundle has no valid 'head' or 'signatures'") from None
    assert head is not None
    points, early = _checkpoints(agent, expected_head, public_key, signed)
    walk = _Walk(agent, points)
    if early is not None:
        walk.fail(*early)
        return walk.report(head)
    for link in _bundle_events(bundle):
        if not walk.step(*link):
            break
    walk.finish(head)
    return walk.report(head)
