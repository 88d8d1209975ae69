"""Driver warnings after a retry (issue 15, items 8 and 11): when the server drops every
connection (a restart, a failover, an administrator), the store's next read and write retry
and succeed, and psycopg_pool's warnings about the connections it discarded do not reach
stderr (they are logged at DEBUG, for whoever asks for them)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from octopoda import AgentRuntime


def drop_connections(admin_url: str, database_url: str) -> int:
    import psycopg

    name = database_url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


def test_a_retry_that_succeeds_prints_no_driver_warning(
    postgres_admin_url: str,
    postgres_databases: Callable[[], str],
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = postgres_databases()
    agent = AgentRuntime("bot", store=url)
    try:
        agent.remember("k", 1)
        capfd.readouterr()
        with caplog.at_level(logging.DEBUG, logger="psycopg.pool"):
            assert drop_connections(postgres_admin_url, url) >= 1
            assert agent.recall("k").value == 1  # retried on a new connection
            assert drop_connections(postgres_admin_url, url) >= 1
            agent.remember("k", 2)
            assert agent.recall("k").value == 2
        assert capfd.readouterr().err == ""
        pool = [r for r in caplog.records if r.name == "psycopg.pool"]
        assert not [r for r in pool if r.levelno >= logging.WARNING]
        assert [r for r in pool if "discarding" in r.getMessage()]  # still there, at DEBUG
    finally:
        agent.store.close()


def test_other_pools_keep_their_warnings(postgres_url: str) -> None:
    """Only Octopoda's store calls and pool threads are quieted."""
    import octopoda._store.postgres.driver  # noqa: F401 - installs the filter

    record = logging.LogRecord("psycopg.pool", logging.WARNING, __file__, 1, "x", (), None)
    record.threadName = "MainThread"
    logger = logging.getLogger("psycopg.pool")
    assert logger.filter(record) and record.levelno == logging.WARNING
    record.threadName = "octopoda-worker-0"
    assert not logger.filter(record) and record.levelno == logging.DEBUG
