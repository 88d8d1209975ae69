"""The classes ``langgraph_swap`` puts in place of LangGraph's: thin subclasses of
``OctopodaSaver`` / ``OctopodaStore``, each taking its framework class's constructor
arguments (and ours, by keyword). Where a connection is passed, ours opens what it names
(``langgraph_swap._sqlite_target`` / ``_postgres_target``)."""

from __future__ import annotations

from typing import Any, ClassVar

from langgraph_swap import (
    _database_of,
    _postgres_target,
    _sqlite_target,
    _test_database_acursor,
    _test_database_cursor,
)
from octopoda_langchain import OctopodaSaver, OctopodaStore


class InMemorySaver(OctopodaSaver):
    def __init__(self, *, serde: Any = None, factory: Any = None, **ours: Any) -> None:
        super().__init__(":memory:", serde=serde, **ours)


class InMemoryStore(OctopodaStore):
    def __init__(self, *, index: Any = None, **ours: Any) -> None:
        super().__init__(":memory:", index=index, **ours)


class SqliteSaver(OctopodaSaver):
    def __init__(self, conn: Any, *, serde: Any = None, **ours: Any) -> None:
        super().__init__(_sqlite_target(conn), serde=serde, **ours)


class SqliteStore(OctopodaStore):
    def __init__(
        self,
        conn: Any,
        *,
        deserializer: Any = None,
        index: Any = None,
        ttl: Any = None,
        **ours: Any,
    ) -> None:
        super().__init__(_sqlite_target(conn), index=index, ttl=ttl, **ours)


class PostgresSaver(OctopodaSaver):
    def __init__(self, conn: Any, pipe: Any = None, serde: Any = None, **ours: Any) -> None:
        super().__init__(_postgres_target(conn), serde=serde, **ours)

    @classmethod
    def from_conn_string(cls, conn_string: str, *, pipeline: bool = False) -> Any:
        return super().from_conn_string(conn_string)


class PostgresStore(OctopodaStore):
    # Fixture plumbing: LangGraph's PostgreSQL store fixtures rewrite the class's SQL
    # migrations and drop their migration table through ``_cursor()`` before they yield the
    # store. Ours has no SQL of that kind: an empty list, and a cursor on the test's own
    # database, where that SQL finds nothing of ours (ours lives in another database).
    MIGRATIONS: ClassVar[list[str]] = []

    def __init__(
        self,
        conn: Any,
        *,
        pipe: Any = None,
        deserializer: Any = None,
        index: Any = None,
        ttl: Any = None,
        **ours: Any,
    ) -> None:
        self._database = _database_of(conn)
        super().__init__(_postgres_target(conn), index=index, ttl=ttl, **ours)

    def _cursor(self) -> Any:
        return _test_database_cursor(self._database)

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: Any = None,
        index: Any = None,
        ttl: Any = None,
    ) -> Any:
        return super().from_conn_string(conn_string, index=index, ttl=ttl)


class _AsyncNames:
    """LangGraph's async stores name their coroutines as the sync ones (``await
    store.sweep_ttl()``); ours is one class with both faces, the async one a-prefixed."""

    async def sweep_ttl(self) -> Any:
        return await self.asweep_ttl()  # type: ignore[attr-defined]

    async def start_ttl_sweeper(self, sweep_interval_minutes: Any = None) -> Any:
        return await self.astart_ttl_sweeper(sweep_interval_minutes)  # type: ignore[attr-defined]

    async def stop_ttl_sweeper(self, timeout: Any = None) -> Any:
        return await self.astop_ttl_sweeper(timeout)  # type: ignore[attr-defined]


class AsyncSqliteStore(_AsyncNames, SqliteStore):  # type: ignore[misc]
    pass


class AsyncPostgresStore(_AsyncNames, PostgresStore):  # type: ignore[misc]
    def _cursor(self) -> Any:
        return _test_database_acursor(self._database)


SHIMS: dict[str, type] = {
    "InMemorySaver": InMemorySaver,
    "InMemoryStore": InMemoryStore,
    "SqliteSaver": SqliteSaver,
    "AsyncSqliteSaver": SqliteSaver,
    "SqliteStore": SqliteStore,
    "AsyncSqliteStore": AsyncSqliteStore,
    "PostgresSaver": PostgresSaver,
    "AsyncPostgresSaver": PostgresSaver,
    "PostgresStore": PostgresStore,
    "AsyncPostgresStore": AsyncPostgresStore,
}
