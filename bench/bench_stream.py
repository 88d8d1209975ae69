"""Peak memory of reads of large values (issue 15, item 6), measured with tracemalloc (the
Python objects a read creates; SQLite's page cache is not counted, and is the same for both
sides).

* ``recall_history(key, limit=1)`` of a key with 20 versions of 10 MB against ``recall(key)``
  of the same key: the limit is the statement's, so both read one version;
* ``export_memories_to(file)`` of 200 MB of values (20 keys x 10 MB) against the data size:
  the bundle is written as it is read, one batch of values (8 MiB) in memory at a time;
* ``audit.verify()`` of the same agent (INFO).

``--quick``: 1 MB values.
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from typing import Any

from _common import Check, Config, line, section

from octopoda import AgentRuntime

HISTORY_RATIO = 1.5  # recall_history(limit=1) peak / recall peak, at most
EXPORT_RATIO = 1.5  # export peak / data size, at most


def _peak(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def bench_stream(cfg: Config) -> list[Check]:
    section("11. peak memory of large reads (tracemalloc)")
    size = cfg.scale(10_000_000, 1_000_000)
    count = 20
    history = AgentRuntime("history", store=str(cfg.tmp / "stream.db"))
    for _ in range(count):
        history.remember("blob", os.urandom(size))
    history.recall("blob")  # warm: the statements prepared, the pages cached
    history.recall_history("blob", limit=1)
    recall = _peak(lambda: history.recall("blob").value)
    limited = _peak(lambda: history.recall_history("blob", limit=1))
    line(f"recall: {recall / 1e6:.1f} MB; recall_history(limit=1): {limited / 1e6:.1f} MB")
    export = AgentRuntime("export", store=history.store)
    for i in range(count):
        export.remember(f"doc{i}", "x" * size)  # JSON text of 10 MB each
    data = count * size
    with open(cfg.tmp / "export.json", "w", encoding="utf-8") as out:
        exported = _peak(lambda: export.export_memories_to(out))
    written = os.path.getsize(cfg.tmp / "export.json")
    line(f"export of {data / 1e6:.0f} MB ({written / 1e6:.0f} MB written): {exported / 1e6:.1f} MB")
    verified = _peak(export.audit.verify)
    line(f"verify of the same agent: {verified / 1e6:.1f} MB")
    history.store.close()
    return [
        Check.at_most(
            "stream",
            f"recall_history(limit=1) peak / recall peak ({count} versions of {size / 1e6:g} MB)",
            limited / recall,
            HISTORY_RATIO,
            unit="x",
        ),
        Check.at_most(
            "stream",
            f"export_memories_to peak / data size ({data / 1e6:g} MB of values)",
            exported / data,
            EXPORT_RATIO,
            unit="x",
        ),
        Check.info("stream", "verify peak (MB)", verified / 1e6),
    ]
