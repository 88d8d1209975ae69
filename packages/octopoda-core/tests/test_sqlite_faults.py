"""The SQLite store when the file system fails under it: a full disk and a file that cannot be
opened raise a ``StorageError`` that says what to do, and nothing of the failed write is
stored. The full disk is SQLite's own SQLITE_FULL, reached with ``max_page_count`` (the limit
SQLite checks where it would grow the file: the same error a full disk gives)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from octopoda import AgentRuntime, SqliteStore, StorageError


def _pages(store: SqliteStore) -> int:
    return int(store._connection().execute("PRAGMA page_count").fetchone()[0])


def test_a_full_disk_fails_the_write_with_what_to_do_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("kept", "a value that was written before the disk filled")
        head = agent.audit.verify().head
        # the file may not grow by one more page: the next sizeable write needs several
        store._connection().execute(f"PRAGMA max_page_count = {_pages(store)}")
        with pytest.raises(StorageError) as caught:
            agent.remember("big", "x" * 200_000)
        message = str(caught.value)
        assert "disk is full" in message and "Free space" in message, message
        assert str(path) in message
        assert not agent.recall("big").found
        report = agent.audit.verify()
        assert report.ok and report.head == head  # no event of the failed write
        store._connection().execute("PRAGMA max_page_count = 1073741823")  # space again
        assert agent.remember("big", "x" * 200_000).version == 1
    with AgentRuntime("bot", store=path) as again:  # and all of it is on disk
        assert again.recall("kept").found and again.recall("big").version == 1
        assert again.audit.verify().ok


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="procfs is Linux's")
def test_a_store_that_cannot_be_opened_says_what_to_check() -> None:
    # /proc exists and is a directory, but no file can be created in it (not even by root)
    with pytest.raises(StorageError) as caught:
        AgentRuntime("bot", store="/proc/octopoda-test.db").remember("k", 1)
    message = str(caught.value)
    assert "cannot be opened" in message and "writable" in message, message
