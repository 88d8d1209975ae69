"""The full-text search of current memories, for every SQL backend.

Each backend keeps one index row per key that has a current value: its newest version and
the text :func:`~octopoda._search.lexical.document_text` makes of it (SQLite: the
``search_docs`` table and the FTS5 table ``search_text``; PostgreSQL: ``memory_search``
with a ``tsvector`` and its GIN index). A commit does not touch them: the search brings
the index up to date before it queries (``sqlite/search_index.py``,
``postgres/search_index.py``). Either way a tombstone or an erasure removes the row, a
returned write is searchable at once and a forgotten key is not. The query joins the row's
version in ``memories`` for the value, and leaves out expired values (at ``now``) like every
other read.

A query is a list of words (:func:`~octopoda._search.lexical.query_terms`: letters and
digits only) that a backend turns into its own syntax (``"a" OR "b"`` for FTS5,
``plainto_tsquery`` with ``|`` for PostgreSQL), any of which may match; so no text a user
types can be a syntax error or an operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from .filters import key_range, live_conditions
from .reads import Dialect
from .rows import StoredRow

__all__ = ["Filtered", "SearchReads", "SearchSql"]


class SearchSql:
    """One dialect's search statement. ``source`` selects ``m`` (the memories columns, the
    newest version of each indexed key) and ``score`` (higher is better), given two
    parameters: the match (``match(terms)``) and the namespace.

    ``shortlist``, if given, is the same search over only the best ``size`` matches of the
    namespace by ``(score, key)`` (a third parameter), ranked before any memory is read, and
    selects after ``score`` the number of those matches: a page of a search is read from it
    when it holds the whole page (:meth:`SearchReads.search`). It spares reading the
    memories of every match that cannot be on the page (most of a search's time at 100,000
    memories: a common word matches thousands)."""

    def __init__(
        self,
        dialect: Dialect,
        source: str,
        match: Callable[[Sequence[str]], Any],
        shortlist: str | None = None,
    ) -> None:
        self.dialect = dialect
        columns = ", ".join("m." + c for c in dialect.memory_columns.split(", "))
        self.source = dialect.sql(source.replace("{columns}", columns))
        self.shortlist = (
            None if shortlist is None else dialect.sql(shortlist.replace("{columns}", columns))
        )
        self.match = match

    def filters(
        self, prefix: str, tags: Sequence[str], now: float | None, kinds: Sequence[str] = ()
    ) -> tuple[list[str], list[Any]]:
        """The conditions (and their parameters) on a current version ``m`` that a search
        shares with every current read (:func:`~octopoda._store.reads.live_conditions`)."""
        d = self.dialect
        where, params = live_conditions(d, now=now, tags=tags, kinds=kinds)
        range_conditions, range_params = key_range("m.key", prefix, d.param)
        return range_conditions + where, range_params + params

    def search(
        self,
        namespace: str,
        terms: Sequence[str],
        *,
        prefix: str,
        tags: Sequence[str],
        now: float | None,
        limit: int | None,
        offset: int,
        kinds: Sequence[str] = (),
        shortlist: int | None = None,
    ) -> tuple[str, list[Any]]:
        """The statement of a search; with ``shortlist`` (a size), over the
        :attr:`shortlist` of that many matches."""
        d = self.dialect
        where, params = self.filters(prefix, tags, now, kinds)
        head = [self.match(terms), namespace]
        if shortlist is None or self.shortlist is None:
            source = self.source
        else:
            source, head = self.shortlist, [*head, shortlist]
        page, page_params = d.limit_offset(limit, offset)
        sql = f"{source} AND {' AND '.join(where)} ORDER BY score DESC, m.key{page}"
        return sql, head + params + page_params

    def filtered(
        self, prefix: str, tags: Sequence[str], now: float | None, kinds: Sequence[str] = ()
    ) -> Filtered:
        """A search's filters, for candidates ranked in the process (a vector search)."""
        return Filtered(self.dialect, *self.filters(prefix, tags, now, kinds))


class Filtered:
    """The filters of one search (conditions on a current version ``m`` and their
    parameters), applied to the keys of candidates ranked in the process."""

    def __init__(self, dialect: Dialect, where: list[str], params: list[Any]) -> None:
        self.dialect = dialect
        self.where = where
        self.params = params

    def current_of_keys(self, namespace: str, keys: Sequence[str]) -> tuple[str, list[Any]]:
        """The current versions of ``keys`` that pass the filters."""
        d = self.dialect
        columns = ", ".join("m." + c for c in d.memory_columns.split(", "))
        in_keys, key_params = d.any_of("m.key", keys)
        sql = (
            f"SELECT {columns} FROM memories m WHERE m.namespace = {d.param} AND {in_keys}"
            " AND m.version = (SELECT MAX(x.version) FROM memories x"
            " WHERE x.namespace = m.namespace AND x.key = m.key)"
        )
        return " AND ".join([sql, *self.where]), [namespace, *key_params, *self.params]


class SearchReads:
    """The search read of the ``Store`` protocol. A backend sets ``_search_sql`` (its
    dialect's :class:`SearchSql`) and provides ``_fetchall``."""

    _search_sql: ClassVar[SearchSql]

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    def _catch_up(self) -> None:
        """Index the writes since the last search (each backend's ``search_index``: the
        index is brought up to date by searches, not by writes)."""
        raise NotImplementedError

    def search(
        self,
        namespace: str,
        terms: Sequence[str],
        *,
        prefix: str = "",
        tags: Sequence[str] = (),
        now: float | None = None,
        limit: int | None = None,
        offset: int = 0,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        """Current values of ``namespace`` whose text holds any of ``terms``, best first,
        each with its relevance (BM25 on SQLite, ``ts_rank`` on PostgreSQL; > 0)."""
        if not terms:
            return []
        self._catch_up()
        search = self._search_sql
        row = search.dialect.row

        def statement(shortlist: int | None = None) -> tuple[str, list[Any]]:
            return search.search(
                namespace,
                terms,
                prefix=prefix,
                tags=tags,
                now=now,
                limit=limit,
                offset=offset,
                kinds=kinds,
                shortlist=shortlist,
            )

        if search.shortlist is not None and limit:
            size = (limit + offset) * 4 + 16
            rows = self._fetchall(*statement(size))
            # the page, if the shortlist held all of it: a whole page, or every match
            if len(rows) == limit or (rows and rows[0][-1] < size):
                return [(row(r[:-2]), float(r[-2])) for r in rows]
        return [(row(r[:-1]), float(r[-1])) for r in self._fetchall(*statement())]
