"""OctopodaMemory beside AutoGen's ListMemory, OctopodaChatCompletionContext beside
UnboundedChatCompletionContext, in one run.

    python bench/bench_autogen.py [--quick] [--rounds N]
    nox -s bench_autogen [-- --quick]

Needs octopoda-autogen (and so autogen-core) installed. Each round uses a fresh SQLite file
in a temp dir; the metric is the median over rounds of ``Octopoda time / AutoGen time``
(the cost of durability: AutoGen's are Python lists that a crash loses; ours commit every
add to SQLite, versioned and audited, before it returns).

* ``memory add``: one text MemoryContent with metadata per call.
* ``memory query``: ``query(text)`` over the same contents. ListMemory returns every content
  unranked; ours ranks by words (BM25) and returns ``k=5``: not the same work, printed for
  scale.
* ``chromadb add`` / ``chromadb query``: ChromaDB's memory (``autogen_ext.memory.chromadb``,
  a persistent collection in the same temp dir, ``k=5``) on the same contents and queries,
  where chromadb installs (``pip install "autogen-ext[chromadb]"``; else the bench says why
  it is skipped). Its default embedder downloads a model, so it gets a deterministic fake
  one (hashed words, 64 dimensions): the numbers are ChromaDB's storage and index, not a
  model's time. Ratio = Octopoda time / ChromaDB time.
* ``context add_message``: one conversation message per call (user, tool call, result,
  answer in turn); ``get_messages`` of the whole conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _common import line, median, section
from autogen_core import FunctionCall
from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)
from octopoda_autogen import OctopodaChatCompletionContext, OctopodaMemory

from octopoda import SqliteStore

WORDS = [
    *("tea", "coffee", "paris", "berlin", "lisbon"),
    *("vegetarian", "pasta", "invoice", "refund", "billing"),
]


def content(i: int) -> MemoryContent:
    words = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(4))
    return MemoryContent(
        content=f"Fact {i}: the user mentioned {words}",
        mime_type=MemoryMimeType.TEXT,
        metadata={"turn": i, "source": "chat"},
    )


def message(i: int) -> LLMMessage:
    kind = i % 4
    if kind == 0:
        return UserMessage(content=f"Question {i}: weather in Lisbon?", source="user")
    if kind == 1:
        call = FunctionCall(id=f"c{i}", name="weather", arguments='{"city": "Lisbon"}')
        return AssistantMessage(content=[call], source="assistant")
    if kind == 2:
        result = FunctionExecutionResult(
            call_id=f"c{i - 1}", content="sunny", is_error=False, name="weather"
        )
        return FunctionExecutionResultMessage(content=[result])
    return AssistantMessage(content=f"Answer {i}: sunny in Lisbon.", source="assistant")


async def timed(n: int, op: Callable[[int], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    for i in range(n):
        await op(i)
    return time.perf_counter() - started


os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # ChromaDB's telemetry: no network


def chroma_missing() -> str | None:
    """Why ChromaDB's memory cannot run here, or None."""
    try:
        import chromadb  # noqa: F401
        from autogen_ext.memory.chromadb import ChromaDBVectorMemory  # noqa: F401
    except ImportError as exc:
        return f"{exc} (pip install 'autogen-ext[chromadb]')"
    return None


def fake_embedder() -> Any:
    """A deterministic ChromaDB embedding function: each word hashed into one of 64
    dimensions, the vector normalized (no model, no download)."""
    from chromadb import Documents, EmbeddingFunction, Embeddings

    class HashedWords(EmbeddingFunction[Documents]):
        def __init__(self) -> None:
            pass

        def __call__(self, input: Documents) -> Embeddings:
            out = []
            for text in input:
                vector = [0.0] * 64
                for word in text.lower().split():
                    vector[hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % 64] += 1
                norm = math.sqrt(sum(v * v for v in vector)) or 1.0
                out.append([v / norm for v in vector])
            return out  # type: ignore[return-value]

        @staticmethod
        def name() -> str:
            return "octopoda-bench-hashed-words"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> HashedWords:
            return HashedWords()

    return HashedWords()


async def chroma_round(workdir: Path, n: int, queries: int) -> dict[str, float]:
    from autogen_ext.memory.chromadb import (
        ChromaDBVectorMemory,
        CustomEmbeddingFunctionConfig,
        PersistentChromaDBVectorMemoryConfig,
    )

    memory = ChromaDBVectorMemory(
        config=PersistentChromaDBVectorMemoryConfig(
            collection_name="bench",
            persistence_path=str(workdir / "chroma"),
            k=5,
            embedding_function_config=CustomEmbeddingFunctionConfig(function=fake_embedder),
        )
    )
    try:
        add = await timed(n, lambda i: memory.add(content(i)))
        query = await timed(
            queries, lambda i: memory.query(f"{WORDS[i % 10]} {WORDS[(i + 3) % 10]}")
        )
        found = await memory.query(f"{WORDS[0]} {WORDS[3]}")
        assert found.results, "ChromaDB's memory found nothing: the bench is broken"
        return {"chromadb add": add, "chromadb query": query}
    finally:
        await memory.close()


async def one_round(workdir: Path, n: int, queries: int) -> dict[str, tuple[float, float]]:
    store = SqliteStore(str(workdir / "bench.db"))
    try:
        ours, theirs = OctopodaMemory("bench", store), ListMemory()
        out = {
            "memory add": (
                await timed(n, lambda i: ours.add(content(i))),
                await timed(n, lambda i: theirs.add(content(i))),
            )
        }
        out["memory query"] = (
            await timed(queries, lambda i: ours.query(f"{WORDS[i % 10]} {WORDS[(i + 3) % 10]}")),
            await timed(queries, lambda i: theirs.query(f"{WORDS[i % 10]}")),
        )
        context = OctopodaChatCompletionContext("bench", store)
        plain = UnboundedChatCompletionContext()
        out["context add_message"] = (
            await timed(n, lambda i: context.add_message(message(i))),
            await timed(n, lambda i: plain.add_message(message(i))),
        )
        out["context get_messages"] = (
            await timed(queries, lambda i: context.get_messages()),
            await timed(queries, lambda i: plain.get_messages()),
        )
        fresh = OctopodaChatCompletionContext("bench", store)
        started = time.perf_counter()
        loaded = len(await fresh.get_messages())
        out[f"context reload ({loaded} messages, new object)"] = (
            time.perf_counter() - started,
            0.0,
        )
        return out
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small samples (a smoke run)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 5)
    n, queries = (50, 20) if args.quick else (400, 100)
    section(
        f"AutoGen (autogen-core {version('autogen-core')}): Octopoda vs in-memory,"
        f" {rounds} rounds, {n} adds, {queries} reads"
    )
    results: dict[str, list[tuple[float, float]]] = {}
    missing = chroma_missing()
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            ours = asyncio.run(one_round(Path(tmp), n, queries))
            for name, pair in ours.items():
                results.setdefault(name, []).append(pair)
            if missing is None:
                chroma = asyncio.run(chroma_round(Path(tmp), n, queries))
                for name, theirs in chroma.items():
                    mine = ours["memory add" if name.endswith("add") else "memory query"][0]
                    results.setdefault(name, []).append((mine, theirs))
    for name, pairs in results.items():
        ours = median(p[0] for p in pairs)
        theirs = median(p[1] for p in pairs)
        count = 1 if name.startswith("context reload") else (n if "add" in name else queries)
        per = f"ours {ours / count * 1e6:8.1f} us/op"
        label = "ChromaDB" if name.startswith("chromadb") else "AutoGen"
        if theirs > 0:
            ratio = median(p[0] / p[1] for p in pairs if p[1] > 0)
            shown = f"{ratio:6.1f}x" if ratio >= 1 else f"{ratio:6.3f}x"
            line(f"{name:24s} {per}, {label} {theirs / count * 1e6:8.2f} us/op, ratio {shown}")
        else:
            line(f"{name:24s} {per}")
    line("ratio = Octopoda time / AutoGen time (AutoGen's are in-memory lists: lost on a crash)")
    if missing is None:
        line(
            "chromadb rows: ChromaDB's memory (persistent, a fake 64-d embedder,"
            f" chromadb {version('chromadb')}) beside the same OctopodaMemory timings"
        )
    else:
        line(f"ChromaDB's memory skipped: {missing}")


if __name__ == "__main__":
    main()
