"""docs/audit.md's worked example matches the library, so the format docs cannot drift."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from octopoda._audit.chain import GENESIS_HASH, event_hash

DOC = (Path(__file__).resolve().parent.parent / "docs" / "audit.md").read_text(encoding="utf-8")


def test_worked_example_hashes() -> None:
    bodies = re.findall(r"seq \d body:\n(.*)\n", DOC)
    hashes = re.findall(r"seq \d hash: ([0-9a-f]{64})", DOC)
    assert len(bodies) == len(hashes) == 2
    prev = GENESIS_HASH
    for body, documented in zip(bodies, hashes, strict=True):
        event = json.loads(body)
        assert event["prev_hash"] == prev
        # The doc's recipe, independently: SHA-256(prev bytes || body).
        assert hashlib.sha256(bytes.fromhex(prev) + body.encode()).hexdigest() == documented
        # And the library produces the same hash from the same fields.
        payload_text = json.dumps(event["payload"], sort_keys=True, separators=(",", ":"))
        assert (
            event_hash(
                event["agent"], event["kind"], payload_text, prev, event["seq"], event["time"]
            )
            == documented
        )
        prev = documented


def test_example_value_digest() -> None:
    assert hashlib.sha256(b'"Alice"').hexdigest() in DOC
