"""install()/uninstall(): the storage factory, and CrewAI's Memory on OctopodaStorage."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import octopoda_crewai
import pytest
from crewai import Memory
from octopoda_crewai import OctopodaStorage, record_key
from scripted import MemoryLLM, hashed_words

needs_factory = pytest.mark.skipif(
    importlib.util.find_spec("crewai.memory.storage.factory") is None,
    reason="this crewai has no set_memory_storage_factory",
)


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "crew.db"
    octopoda_crewai.install(store=str(db))
    yield db
    octopoda_crewai.uninstall()


def memory(storage: object, **kw: object) -> Memory:
    return Memory(storage=storage, embedder=hashed_words, llm=MemoryLLM(**kw))  # type: ignore[arg-type]


def test_memory_on_an_explicit_storage_remembers_and_recalls(store_url: str) -> None:
    storage = OctopodaStorage(store_url)
    m = memory(storage, scope="/inferred", categories=["auto"])
    try:
        saved = m.remember("The deploy key rotates every Monday.", scope="/ops", importance=0.9)
        assert saved is not None
        m.remember("Tea is served at four.")  # scope and categories inferred by its model
        m.drain_writes()
        found = m.recall("when does the deploy key rotate", limit=3, depth="shallow")
        assert found and found[0].record.content == "The deploy key rotates every Monday."
        assert 0.0 <= found[0].score <= 1.0
        assert sorted(m.list_scopes("/")) == ["/inferred", "/ops"]
        assert m.forget(scope="/ops") == 1
        history = storage.agent.recall_history(record_key(saved.id))
        assert history[0].tombstone
    finally:
        m.close()
    assert storage.agent.audit.verify().ok


@needs_factory
def test_install_routes_octopoda_and_the_default_spec(installed: Path) -> None:
    for spec in ("octopoda", "lancedb"):
        m = memory(spec)
        try:
            assert isinstance(m._storage, OctopodaStorage)
            m.remember(f"saved through {spec}", scope="/x")
            m.drain_writes()
        finally:
            m.close()
    with OctopodaStorage(str(installed)) as storage:
        assert sorted(r.content for r in storage.list_records()) == [
            "saved through lancedb",
            "saved through octopoda",
        ]


@needs_factory
def test_other_specs_keep_crewais_storage(installed: Path, tmp_path: Path) -> None:
    from crewai.memory.storage.factory import resolve_memory_storage

    assert resolve_memory_storage("qdrant-edge") is None
    assert resolve_memory_storage(str(tmp_path / "lance")) is None


@needs_factory
def test_install_is_idempotent_and_uninstall_restores(tmp_path: Path) -> None:
    from crewai.memory.storage.factory import resolve_memory_storage

    db = str(tmp_path / "a.db")
    octopoda_crewai.install(store=db)
    first = octopoda_crewai.installed()
    octopoda_crewai.install(store=db)
    assert octopoda_crewai.installed() is first
    octopoda_crewai.install(store=db, default=False)  # other arguments replace it
    assert octopoda_crewai.installed() is not first
    assert resolve_memory_storage("lancedb") is None
    found = resolve_memory_storage("octopoda")
    assert isinstance(found, OctopodaStorage)
    found.close()
    assert octopoda_crewai.uninstall() is True
    assert octopoda_crewai.uninstall() is False
    assert resolve_memory_storage("octopoda") is None
    assert octopoda_crewai.installed() is None


@needs_factory
def test_uninstall_leaves_someone_elses_factory(tmp_path: Path) -> None:
    from crewai.memory.storage.factory import resolve_memory_storage, set_memory_storage_factory

    octopoda_crewai.install(store=str(tmp_path / "a.db"))
    sentinel = OctopodaStorage(":memory:")
    set_memory_storage_factory(lambda spec: sentinel)
    try:
        octopoda_crewai.uninstall()
        assert resolve_memory_storage("anything") is sentinel
    finally:
        set_memory_storage_factory(None)
        sentinel.close()
