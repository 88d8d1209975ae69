"""OctopodaStorage against CrewAI's StorageBackend protocol, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord
from octopoda_crewai import (
    EmbeddingDimensionMismatchError,
    OctopodaStorage,
    record_key,
)

E = [0.1, 0.2, 0.3, 0.4]


def rec(
    content: str = "test",
    scope: str = "/",
    categories: list[str] | None = None,
    embedding: list[float] | None = None,
    metadata: dict[str, Any] | None = None,
    created_at: datetime | None = None,
    **kw: Any,
) -> MemoryRecord:
    extra = {"created_at": created_at} if created_at else {}
    return MemoryRecord(
        content=content,
        scope=scope,
        categories=categories or [],
        embedding=embedding or list(E),
        metadata=metadata or {},
        **extra,
        **kw,
    )


def test_it_is_a_storage_backend(storage: OctopodaStorage) -> None:
    assert isinstance(storage, StorageBackend)


def test_save_then_get_round_trips_every_field(storage: OctopodaStorage) -> None:
    when = datetime(2025, 3, 1, 12, 0, 0)
    r = rec(
        "the sky is blue",
        scope="/crew/a",
        categories=["fact", "sky"],
        metadata={"env": "prod", "n": 3},
        importance=0.8,
        created_at=when,
        source="user-1",
        private=True,
    )
    storage.save([r])
    got = storage.get_record(r.id)
    assert got is not None
    assert (got.id, got.content, got.scope) == (r.id, "the sky is blue", "/crew/a")
    assert got.categories == ["fact", "sky"]
    assert got.metadata == {"env": "prod", "n": 3}
    assert (got.importance, got.source, got.private) == (0.8, "user-1", True)
    assert got.created_at == when
    assert got.embedding is not None
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(got.embedding, E, strict=True))


def test_timestamps_come_back_naive_utc(storage: OctopodaStorage) -> None:
    aware = datetime(2025, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    r = rec(created_at=aware)
    storage.save([r])
    got = storage.get_record(r.id)
    assert got is not None
    assert got.created_at.tzinfo is None and got.last_accessed.tzinfo is None
    assert got.created_at == datetime(2025, 1, 1, 12, 0)
    # CrewAI's scoring subtracts utcnow(): must not raise
    assert datetime.now(timezone.utc).replace(tzinfo=None) - got.created_at > timedelta(0)


def test_get_record_not_found(storage: OctopodaStorage) -> None:
    assert storage.get_record("nonexistent-id") is None


def test_save_and_update_are_versions_delete_is_a_tombstone(storage: OctopodaStorage) -> None:
    r = rec("original", scope="/a")
    storage.save([r])
    r.content = "updated"
    storage.update(r)
    got = storage.get_record(r.id)
    assert got is not None and got.content == "updated"
    assert storage.delete(record_ids=[r.id]) == 1
    assert storage.get_record(r.id) is None
    history = storage.agent.recall_history(record_key(r.id))
    assert [v.value["content"] if v.value else None for v in reversed(history)] == [
        "original",
        "updated",
        None,
    ]
    assert storage.agent.audit.verify().ok


def test_update_without_embedding_keeps_the_stored_one(storage: OctopodaStorage) -> None:
    r = rec("x", embedding=[1.0, 0.0, 0.0, 0.0])
    storage.save([r])
    storage.update(r.model_copy(update={"content": "y", "embedding": None}))
    found = storage.search([1.0, 0.0, 0.0, 0.0], limit=1)
    assert [(m.content, round(s, 4)) for m, s in found] == [("y", 1.0)]


def test_search_ranks_by_similarity_with_scores_in_0_1(storage: OctopodaStorage) -> None:
    storage.save(
        [
            rec("exact", embedding=[1.0, 0.0, 0.0, 0.0]),
            rec("close", embedding=[0.9, 0.1, 0.0, 0.0]),
            rec("opposite", embedding=[-1.0, 0.0, 0.0, 0.0]),
            rec("orthogonal", embedding=[0.0, 1.0, 0.0, 0.0]),
        ]
    )
    found = storage.search([1.0, 0.0, 0.0, 0.0], limit=10)
    assert [r.content for r, _ in found][:2] == ["exact", "close"]
    assert all(0.0 <= s <= 1.0 for _, s in found)
    assert found[0][1] == pytest.approx(1.0, abs=1e-6)
    assert dict((r.content, s) for r, s in found)["opposite"] == 0.0
    assert len(storage.search([1.0, 0.0, 0.0, 0.0], limit=2)) == 2
    above = storage.search([1.0, 0.0, 0.0, 0.0], limit=10, min_score=0.5)
    assert [r.content for r, _ in above] == ["exact", "close"]


def test_scope_prefix_has_path_semantics(storage: OctopodaStorage) -> None:
    storage.save(
        [
            rec("sales", scope="/crew/sales"),
            rec("eng", scope="/crew/eng"),
            rec("crew", scope="/crew"),
            rec("crewmate", scope="/crewmate"),
            rec("other", scope="/other"),
        ]
    )
    found = storage.search(E, scope_prefix="/crew", limit=10)
    assert sorted(r.content for r, _ in found) == ["crew", "eng", "sales"]
    assert storage.count("/crew") == 3
    assert storage.count("crew/") == 3  # normalised
    assert storage.count("/crew/sales") == 1
    assert storage.count("/") == storage.count() == 5
    assert sorted(r.content for r in storage.list_records("/crew")) == ["crew", "eng", "sales"]


def test_category_filter_is_any_of(storage: OctopodaStorage) -> None:
    storage.save(
        [
            rec("one", categories=["cat1"]),
            rec("two", categories=["cat2"]),
            rec("both", categories=["cat1", "cat2"]),
            rec("none"),
        ]
    )
    found = storage.search(E, categories=["cat1"], limit=10)
    assert sorted(r.content for r, _ in found) == ["both", "one"]
    found = storage.search(E, categories=["cat1", "cat2"], limit=10)
    assert sorted(r.content for r, _ in found) == ["both", "one", "two"]


def test_metadata_filter_needs_every_pair(storage: OctopodaStorage) -> None:
    storage.save(
        [
            rec("prod-eu", metadata={"env": "prod", "region": "eu"}),
            rec("prod-us", metadata={"env": "prod", "region": "us"}),
            rec("dev", metadata={"env": "dev"}),
        ]
    )
    found = storage.search(E, metadata_filter={"env": "prod"}, limit=10)
    assert sorted(r.content for r, _ in found) == ["prod-eu", "prod-us"]
    found = storage.search(E, metadata_filter={"env": "prod", "region": "eu"}, limit=10)
    assert [r.content for r, _ in found] == ["prod-eu"]
    assert storage.search(E, metadata_filter={"missing": None}, limit=10) == []


def test_list_records_newest_first_with_limit_and_offset(storage: OctopodaStorage) -> None:
    base = datetime(2025, 1, 1)
    storage.save([rec(f"item {i}", created_at=base + timedelta(days=i)) for i in range(5)])
    page1 = storage.list_records(limit=2, offset=0)
    page2 = storage.list_records(limit=2, offset=2)
    page3 = storage.list_records(limit=2, offset=4)
    assert [r.content for r in page1 + page2 + page3] == [f"item {i}" for i in (4, 3, 2, 1, 0)]


def test_scopes_and_scope_info(storage: OctopodaStorage) -> None:
    storage.save(
        [
            rec("root", scope="/", categories=["r"], created_at=datetime(2025, 1, 1)),
            rec("t", scope="/team", categories=["t"], created_at=datetime(2025, 1, 2)),
            rec("ta", scope="/team/a", categories=["a"], created_at=datetime(2025, 1, 3)),
            rec("tb", scope="/team/b/deep", created_at=datetime(2025, 1, 4)),
            rec("u", scope="/user", created_at=datetime(2025, 1, 5)),
        ]
    )
    assert storage.list_scopes("/") == ["/team", "/user"]
    assert storage.list_scopes("/team") == ["/team/a", "/team/b"]
    assert storage.list_scopes("/team/") == ["/team/a", "/team/b"]
    assert storage.list_scopes("/nothing") == []
    info = storage.get_scope_info("/team")
    assert info.path == "/team"
    assert info.record_count == 3
    assert info.categories == ["a", "t"]
    assert info.oldest_record == datetime(2025, 1, 2)
    assert info.newest_record == datetime(2025, 1, 4)
    assert info.child_scopes == ["/team/a", "/team/b"]
    root = storage.get_scope_info("/")
    assert (root.path, root.record_count, root.child_scopes) == ("/", 5, ["/team", "/user"])
    empty = storage.get_scope_info("/nothing/")
    assert (empty.path, empty.record_count, empty.oldest_record) == ("/nothing", 0, None)


def test_list_categories_counts(storage: OctopodaStorage) -> None:
    storage.save(
        [
            rec(categories=["a", "b"], scope="/x"),
            rec(categories=["b", "c"], scope="/x/y"),
            rec(categories=["c"], scope="/z"),
        ]
    )
    assert storage.list_categories() == {"a": 1, "b": 2, "c": 2}
    assert storage.list_categories("/x") == {"a": 1, "b": 2, "c": 1}


def test_delete_criteria_combine(storage: OctopodaStorage) -> None:
    old, new = datetime(2024, 1, 1), datetime(2025, 6, 1)
    a = rec("a", scope="/s", categories=["k"], metadata={"m": 1}, created_at=old)
    b = rec("b", scope="/s", categories=["k"], metadata={"m": 2}, created_at=new)
    c = rec("c", scope="/t", categories=["k"], created_at=old)
    d = rec("d", scope="/s/sub", categories=["j"], created_at=old)
    storage.save([a, b, c, d])
    assert storage.delete(scope_prefix="/s", categories=["k"], older_than=datetime(2025, 1, 1)) == 1
    assert storage.get_record(a.id) is None
    assert storage.delete(metadata_filter={"m": 2}) == 1
    assert storage.delete(record_ids=[c.id, "unknown"], scope_prefix="/s") == 0  # c is in /t
    assert storage.delete(record_ids=[c.id, "unknown"]) == 1
    assert storage.delete(record_ids=[c.id]) == 0  # already gone
    assert [r.content for r in storage.list_records()] == ["d"]
    assert storage.delete() == 1
    assert storage.count() == 0


def test_reset_all_and_scoped_are_tombstones(storage: OctopodaStorage) -> None:
    a, b = rec(scope="/a"), rec(scope="/b")
    storage.save([a, b])
    storage.reset(scope_prefix="/a")
    assert storage.count() == 1 and storage.get_record(b.id) is not None
    storage.reset()
    assert storage.count() == 0
    assert storage.search(E) == []
    history = storage.agent.recall_history(record_key(a.id))
    assert history[0].tombstone and history[1].value["scope"] == "/a"
    # after a full reset the dimension is free again
    storage.save([rec(embedding=[1.0, 0.0])])
    assert storage.count() == 1


def test_touch_records_moves_last_accessed(storage: OctopodaStorage) -> None:
    r = rec(last_accessed=datetime(2025, 1, 1))
    storage.save([r])
    storage.touch_records([r.id, "missing"])
    after = storage.get_record(r.id)
    assert after is not None and after.last_accessed > datetime(2025, 1, 2)
    assert after.last_accessed.tzinfo is None


def test_dimension_mismatch_raises_crewais_error(storage: OctopodaStorage) -> None:
    storage.save([rec(embedding=[0.1, 0.2, 0.3, 0.4])])
    with pytest.raises(EmbeddingDimensionMismatchError) as caught:
        storage.save([rec(embedding=[0.1, 0.2])])
    assert isinstance(caught.value, ValueError)
    assert (caught.value.stored_dim, caught.value.new_dim) == (4, 2)
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.search([0.1, 0.2, 0.3])
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.update(rec(embedding=[1.0] * 8))
    with pytest.raises(EmbeddingDimensionMismatchError):  # within one batch
        OctopodaStorage(":memory:").save([rec(embedding=[1.0]), rec(embedding=[1.0, 2.0])])
    assert storage.count() == 1


def test_the_dimension_survives_a_reopen(store_url: str) -> None:
    with OctopodaStorage(store_url) as first:
        first.save([rec("kept", embedding=[0.1, 0.2, 0.3, 0.4])])
    with OctopodaStorage(store_url) as second:
        assert [r.content for r, _ in second.search(E)] == ["kept"]
        with pytest.raises(EmbeddingDimensionMismatchError):
            second.save([rec(embedding=[1.0, 2.0])])


def test_a_second_storage_on_the_same_store_sees_writes(store_url: str) -> None:
    with OctopodaStorage(store_url) as one, OctopodaStorage(store_url) as two:
        r = rec("from one", scope="/shared")
        one.save([r])
        assert two.count("/shared") == 1
        assert [x.content for x, _ in two.search(E)] == ["from one"]
        two.delete(record_ids=[r.id])
        assert one.get_record(r.id) is None


def test_a_second_storage_catches_up_on_the_changes_without_reading_everything(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OctopodaStorage(store_url) as one, OctopodaStorage(store_url) as two:
        kept = [rec(f"kept {i}", scope="/a") for i in range(20)]
        one.save(kept)
        assert two.count() == 20
        reloads: list[int] = []
        reload = two._reload
        monkeypatch.setattr(two, "_reload", lambda: (reloads.append(1), reload())[1])
        one.update(kept[0].model_copy(update={"content": "moved", "scope": "/b"}))
        one.delete(record_ids=[kept[1].id])
        one.save([rec("new", scope="/b", embedding=[0.4, 0.3, 0.2, 0.1])])
        assert two.count() == 20  # one deleted, one new
        assert {r.content for r in two.list_records("/b")} == {"moved", "new"}
        assert two.get_record(kept[1].id) is None
        assert two.search([0.4, 0.3, 0.2, 0.1], limit=1)[0][0].content == "new"
        two.save([rec("from two", scope="/c")])  # its own writes on top
        one.reset("/a")
        assert two.count("/a") == 0 and two.count() == 3
        assert reloads == []  # caught up from the events, never read everything again
        with OctopodaStorage(store_url) as three:  # the cache is what the store holds
            assert {r.id: r.content for r in three.list_records()} == {
                r.id: r.content for r in two.list_records()
            }


def test_a_batch_saving_an_id_twice_keeps_its_last_version(storage: OctopodaStorage) -> None:
    first = rec("first", embedding=[1.0, 0.0, 0.0, 0.0])
    again = first.model_copy(update={"content": "again", "embedding": [0.0, 0.0, 0.0, 2.0]})
    storage.save([first, rec("other", embedding=[0.0, 1.0, 0.0, 0.0]), again])
    assert storage.count() == 2
    found = storage.search([0.0, 0.0, 0.0, 1.0], limit=1)
    assert [(r.id, r.content) for r, _ in found] == [(first.id, "again")]
    assert found[0][1] == pytest.approx(1.0, abs=1e-6)  # (normalised)
    assert storage.search([1.0, 0.0, 0.0, 0.0], limit=1)[0][1] < 0.5
    history = storage.agent.recall_history(record_key(first.id))
    assert [v.value["content"] for v in history] == ["again", "first"]


def test_records_without_embedding_are_stored_not_searched(storage: OctopodaStorage) -> None:
    r = MemoryRecord(content="no vector", scope="/n")
    storage.save([r])
    assert storage.count() == 1
    assert storage.search(E) == []
    storage.save([rec("vector")])
    assert [x.content for x, _ in storage.search(E)] == ["vector"]


def test_async_twins(storage: OctopodaStorage) -> None:
    async def go() -> tuple[int, list[str], int]:
        r = rec("async", scope="/as")
        await storage.asave([r])
        found = await storage.asearch(E, scope_prefix="/as", limit=3)
        gone = await storage.adelete(scope_prefix="/as")
        return len(found), [x.content for x, _ in found], gone

    assert asyncio.run(go()) == (1, ["async"], 1)


def test_close_is_idempotent_and_a_later_call_reopens(store_url: str) -> None:
    s = OctopodaStorage(store_url)
    s.save([rec("kept")])
    s.close()
    s.close()
    assert s.count() == 1  # as CrewAI's storages: usable after close (Memory.close())
    s.save([rec("more")])
    s.close()
    with OctopodaStorage(store_url) as again:
        assert again.count() == 2


def test_a_runtime_passed_in_stays_open(store_url: str) -> None:
    from octopoda import AgentRuntime

    with AgentRuntime("mine", store=store_url) as agent:
        s = OctopodaStorage(agent)
        s.save([rec("x")])
        s.close()
        assert agent.keys("crewai/") == [record_key(s_id) for s_id in [_only_id(agent)]]


def _only_id(agent: Any) -> str:
    return str(agent.search("crewai/mem/", limit=None)[0].value["id"])


def test_record_ids_with_slashes_are_escaped(storage: OctopodaStorage) -> None:
    r = rec("odd id", id="a/b%c")
    storage.save([r])
    got = storage.get_record("a/b%c")
    assert got is not None and got.content == "odd id"
    assert record_key("a/b%c") == "crewai/mem/a%2Fb%25c"


def test_update_can_move_a_record_to_another_scope(storage: OctopodaStorage) -> None:
    r = rec("mover", scope="/a/x")
    storage.save([r])
    storage.update(r.model_copy(update={"scope": "/b"}))
    assert (storage.count("/a"), storage.count("/b")) == (0, 1)
    assert storage.list_scopes("/") == ["/b"]
    assert [x.content for x, _ in storage.search(E, scope_prefix="/b")] == ["mover"]
    assert storage.search(E, scope_prefix="/a") == []
