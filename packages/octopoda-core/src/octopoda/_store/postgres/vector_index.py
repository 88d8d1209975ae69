"""PostgreSQL's vector index (``vector_reads.py`` says how it is kept): a pgvector column
``embedding vector(dimension)`` on ``memory_vectors`` with an HNSW index (cosine), added
when the first model is recorded, and searched in SQL (``<=>``, the cosine distance).

The extension's objects are named with its schema (``pg_extension.extnamespace``), so a
store whose ``search_path`` is its own schema finds them wherever ``CREATE EXTENSION``
put them. Storing vectors takes the search index's advisory lock (``search_index.py``),
which ``erase`` also takes, so a catch-up never writes an erased key's vector back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from ..._errors import ConfigError
from ..ops import agent_namespace
from ..search_reads import SearchSql
from ..vector_reads import PendingVectors, VectorModel, mismatch, written_texts
from .search_index import SEARCH_LOCK, SEARCH_LOCK_SQL, WRITTEN

__all__ = ["apply", "extension_schema", "no_pgvector", "pending", "search_sql"]

Run = Callable[..., Any]

MODEL: Final = "SELECT model, dimension FROM vector_model WHERE id = 1"
_PUT_MODEL: Final = (
    "INSERT INTO vector_model (id, model, dimension) VALUES (1, %s, %s) ON CONFLICT DO NOTHING"
)
_BEHIND: Final = (
    "SELECT a.id, COALESCE(s.seq, 0), a.head_seq FROM agents a"
    " LEFT JOIN vector_marks s ON s.agent = a.id WHERE a.head_seq > COALESCE(s.seq, 0)"
)
_MARK: Final = "SELECT COALESCE((SELECT seq FROM vector_marks WHERE agent = %s), 0)"
_SET_MARK: Final = (
    "INSERT INTO vector_marks (agent, seq) VALUES (%s, %s)"
    " ON CONFLICT (agent) DO UPDATE SET seq = EXCLUDED.seq"
)
_DROP: Final = "DELETE FROM memory_vectors WHERE namespace = %s AND key = %s"
_EXTENSION: Final = (
    "SELECT quote_ident(n.nspname) FROM pg_extension e"
    " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
)
_HAS_COLUMN: Final = (
    "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('memory_vectors')"
    " AND attname = 'embedding' AND NOT attisdropped"
)
RESET: Final = (
    "DELETE FROM memory_vectors",
    "ALTER TABLE memory_vectors DROP COLUMN IF EXISTS embedding",
    "DELETE FROM vector_marks",
    "DELETE FROM vector_model",
)


def no_pgvector(display: str, cause: object) -> ConfigError:
    return ConfigError(
        f"the PostgreSQL database {display} has no pgvector extension, which search by"
        f" meaning needs there ({cause}); install pgvector on the server (Debian/Ubuntu:"
        " apt install postgresql-NN-pgvector; https://github.com/pgvector/pgvector) and run"
        " CREATE EXTENSION vector as its owner, or use the embedder with a SQLite store"
    )


def extension_schema(run: Run) -> str | None:
    row = run(_EXTENSION).fetchone()
    return None if row is None else str(row[0])


def pending(run: Run) -> list[PendingVectors]:
    out = []
    for agent, mark, head in run(_BEHIND).fetchall():
        rows = run(WRITTEN, (agent_namespace(agent), agent, mark, head)).fetchall()
        texts, drops = written_texts(rows)
        out.append(PendingVectors(agent, mark, head, texts, drops))
    return out


def literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's text input, ``[x,y,...]``."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _ensure_column(run: Run, schema: str, dimension: int, new_model: bool) -> None:
    """The ``embedding`` column of ``dimension`` and its index; a new model (the first,
    or the first after a reset) gets them afresh."""
    if run(_HAS_COLUMN).fetchone() is not None:
        if not new_model:
            return
        run("DELETE FROM memory_vectors")
        run("ALTER TABLE memory_vectors DROP COLUMN embedding")
    run(f"ALTER TABLE memory_vectors ADD COLUMN embedding {schema}.vector({int(dimension)})")
    run(
        "CREATE INDEX memory_vectors_embedding ON memory_vectors"
        f" USING hnsw (embedding {schema}.vector_cosine_ops)"
    )


def apply(
    run: Run,
    executemany: Run,
    schema: str,
    model: VectorModel,
    todo: PendingVectors | None,
    puts: Sequence[tuple[str, str, int, Sequence[float]]],
) -> None:
    """Inside a transaction: see ``VectorReads._vector_apply``."""
    run(SEARCH_LOCK_SQL, (SEARCH_LOCK,))
    new_model = run(_PUT_MODEL, model).rowcount == 1
    stored = VectorModel(*run(MODEL).fetchone())
    if stored != model:
        raise mismatch(stored, model.name, model.dimension)
    _ensure_column(run, schema, model.dimension, new_model)
    if todo is not None and run(_MARK, (todo.agent,)).fetchone()[0] != todo.mark:
        return  # (another process indexed these writes first)
    if todo is not None:
        executemany(_DROP, todo.drops)
    put = (
        "INSERT INTO memory_vectors (namespace, key, version, embedding)"
        f" VALUES (%s, %s, %s, %s::{schema}.vector) ON CONFLICT (namespace, key) DO UPDATE"
        " SET version = EXCLUDED.version, embedding = EXCLUDED.embedding"
        " WHERE EXCLUDED.version >= memory_vectors.version"
    )
    executemany(put, [(ns, k, ver, literal(v)) for ns, k, ver, v in puts])
    if todo is not None:
        run(_SET_MARK, (todo.agent, todo.head))


COUNT: Final = "SELECT COUNT(*) FROM memory_vectors WHERE namespace = %s"
ITERATIVE_SCAN: Final = "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)"
_VERSION: Final = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"


def iterative_scans(run: Run) -> bool:
    """Whether the server's pgvector (0.8 and later) can continue an HNSW scan past its
    candidate list until a filtered query has its rows (``hnsw.iterative_scan``)."""
    row = run(_VERSION).fetchone()
    if row is None:
        return False
    parts = [int(p) if p.isdigit() else 0 for p in str(row[0]).split(".")[:2]]
    return [*parts, 0][:2] >= [0, 8]


def search_sql(
    sql: SearchSql,
    schema: str,
    namespace: str,
    query: Sequence[float],
    prefix: str,
    tags: Sequence[str],
    now: float | None,
    candidates: int,
    kinds: Sequence[str] = (),
) -> tuple[str, list[Any]]:
    """The ``candidates`` nearest vectors of ``namespace`` (an HNSW index scan: the inner
    query orders by distance alone), then their memories where current and passing the
    filters, nearest first, each with its cosine similarity (``1 - <=>``)."""
    d = sql.dialect
    columns = ", ".join("m." + c for c in d.memory_columns.split(", "))
    distance = f"v.embedding OPERATOR({schema}.<=>) %s::{schema}.vector"
    where, params = sql.filters(prefix, tags, now, kinds)
    text = (
        f"SELECT {columns}, 1 - c.distance AS score FROM (SELECT v.namespace, v.key,"
        f" v.version, {distance} AS distance FROM memory_vectors v WHERE v.namespace = %s"
        f" ORDER BY {distance} LIMIT %s) c"
        " JOIN memories m ON m.namespace = c.namespace AND m.key = c.key"
        " AND m.version = c.version WHERE NOT EXISTS (SELECT 1 FROM memories n"
        " WHERE n.namespace = m.namespace AND n.key = m.key AND n.version > m.version)"
    )
    text = " AND ".join([text, *where]) + " ORDER BY c.distance, m.key"
    vector = literal(query)
    return text, [vector, namespace, vector, candidates, *params]
