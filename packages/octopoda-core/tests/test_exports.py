"""The public surface of ``octopoda`` and of its backend SPI ``octopoda.store``: what
``__all__`` lists, exists and covers, what moved (and still works, with a warning), and what
``import octopoda`` loads (in the spirit of httpx's tests/test_exported_members.py)."""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import pathlib
import pkgutil
import subprocess
import sys
import types
import typing
import warnings
from typing import Any

import pytest

import octopoda
import octopoda.store

# Modules whose every listed name is part of the user-facing API.
USER_FACING_MODULES = [
    "_errors",
    "_records",
    "_runtime.runtime",
    "_store.sqlite.store",
    "_audit.trail",
]
# Modules whose every listed name is part of the backend SPI (octopoda.store).
SPI_MODULES = ["_store.ops", "_store.rows", "_store.protocol"]
# The names that moved from octopoda to octopoda.store (deprecated aliases for one release).
MOVED = [
    "AgentRow",
    "ConflictRow",
    "CreateSpace",
    "EraseKey",
    "MarkRead",
    "MemoryWrite",
    "MessageRow",
    "Op",
    "ResolveConflict",
    "SendMessage",
    "SnapshotRow",
    "SpaceRow",
    "StoredRow",
]
# Names only imported for type checking in the library (resolved here to read the hints).
_HINT_NAMES = {
    "timedelta": datetime.timedelta,
    "Path": pathlib.Path,
    "Any": typing.Any,
    "IntegrationStatus": octopoda.IntegrationStatus,
}


# Private packages that need an extra, and the module of that extra: walked only when it is
# installed (the command line needs click, the MCP server mcp, the HTTP server fastapi).
_EXTRA_PACKAGES = {"_cli": "click", "_mcp": "mcp", "_server": "fastapi", "_dashboard": "fastapi"}


def _library_modules() -> list[types.ModuleType]:
    """octopoda's private modules and packages, those of an extra when it is installed."""
    skipped = {
        package
        for package, needs in _EXTRA_PACKAGES.items()
        if importlib.util.find_spec(needs) is None
    }
    names = [
        m.name
        for m in pkgutil.walk_packages(octopoda.__path__, "octopoda.")
        if m.name.split(".")[1].startswith("_")
        and not m.name.split(".")[1].startswith("__")
        and m.name.split(".")[1] not in skipped
    ]
    return [importlib.import_module(name) for name in sorted(names)]


def _load_everything() -> None:
    for name in octopoda.__all__:
        getattr(octopoda, name)


def test_all_is_sorted_and_unique() -> None:
    assert octopoda.__all__ == sorted(octopoda.__all__)
    assert len(set(octopoda.__all__)) == len(octopoda.__all__)


@pytest.mark.parametrize("name", octopoda.__all__)
def test_every_name_in_all_exists(name: str) -> None:
    assert getattr(octopoda, name) is not None
    assert name in dir(octopoda)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, Any] = {}
    exec("from octopoda import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(octopoda.__all__)


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        octopoda.no_such_name  # noqa: B018


def test_public_namespace_is_exactly_all() -> None:
    _load_everything()
    public = {
        name
        for name, value in vars(octopoda).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public <= set(octopoda.__all__), public - set(octopoda.__all__)


@pytest.mark.parametrize("module", USER_FACING_MODULES)
def test_user_facing_modules_are_fully_exported(module: str) -> None:
    mod = importlib.import_module(f"octopoda.{module}")
    for name in mod.__all__:
        assert name in octopoda.__all__, f"octopoda.{module}.{name} is not exported"
        assert getattr(octopoda, name) is getattr(mod, name)


def test_every_exception_is_exported() -> None:
    errors = {
        obj
        for mod in _library_modules()
        for obj in vars(mod).values()
        if isinstance(obj, type)
        and issubclass(obj, octopoda.OctopodaError)
        and obj.__module__ == mod.__name__
    }
    assert octopoda.OctopodaError in errors
    missing = sorted(e.__name__ for e in errors if getattr(octopoda, e.__name__, None) is not e)
    assert missing == []
    for name in octopoda.__all__:
        obj = getattr(octopoda, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, octopoda.OctopodaError), name


def _octopoda_classes(hint: Any) -> set[type]:
    """The octopoda classes a type hint mentions."""
    found: set[type] = set()
    # (on Python 3.10 a parametrised alias such as Callable[[Event], Event] passes
    # isinstance(..., type); it is not a class of ours)
    if (
        isinstance(hint, type)
        and not isinstance(hint, types.GenericAlias)
        and getattr(hint, "__origin__", None) is None
        and hint.__module__.startswith("octopoda.")
    ):
        found.add(hint)
    for arg in typing.get_args(hint):
        found |= _octopoda_classes(arg)
    return found


def _signature_classes(cls: type) -> set[type]:
    found: set[type] = set()
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, property):
            member = member.fget
        if not callable(member):
            continue
        try:
            hints = typing.get_type_hints(member, localns=_HINT_NAMES)
        except TypeError:  # not a function with annotations (e.g. an inherited builtin)
            continue
        for hint in hints.values():
            found |= _octopoda_classes(hint)
    return found


def _exported(cls: type) -> bool:
    """Named by ``octopoda`` or by the backend SPI ``octopoda.store``."""
    for module in (octopoda, octopoda.store):
        if cls.__name__ in module.__all__ and getattr(module, cls.__name__) is cls:
            return True
    return False


def test_types_in_public_signatures_are_exported() -> None:
    """A user (or a Store backend) can name every type the public API takes or returns."""
    _load_everything()
    seen: set[type] = set()
    todo = [
        obj
        for module in (octopoda, octopoda.store)
        for obj in (getattr(module, n) for n in module.__all__)
        if isinstance(obj, type) and not isinstance(obj, types.GenericAlias)  # 3.10: aliases
    ]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(_signature_classes(cls) - seen)
    missing = sorted(f"{c.__module__}.{c.__name__}" for c in seen if not _exported(c))
    assert missing == []


# -- the backend SPI: octopoda.store ----------------------------------------------------------


def test_store_all_is_sorted_unique_and_exists() -> None:
    names = octopoda.store.__all__
    assert names == sorted(names) and len(set(names)) == len(names)
    for name in names:
        assert getattr(octopoda.store, name) is not None
    assert sorted(dir(octopoda.store)) == names
    namespace: dict[str, Any] = {}
    exec("from octopoda.store import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == names


@pytest.mark.parametrize("module", SPI_MODULES)
def test_spi_modules_are_fully_exported(module: str) -> None:
    mod = importlib.import_module(f"octopoda.{module}")
    for name in mod.__all__:
        if name.isupper():  # constants (SPACE_PREFIX) stay private
            continue
        assert name in octopoda.store.__all__, f"octopoda.{module}.{name} is not exported"
        assert getattr(octopoda.store, name) is getattr(mod, name)


def test_the_stores_and_the_protocol_are_in_both() -> None:
    for name in ("Store", "SqliteStore", "PostgresStore"):
        assert name in octopoda.__all__ and name in octopoda.store.__all__
        assert getattr(octopoda, name) is getattr(octopoda.store, name)


def test_moved_names_are_not_in_all() -> None:
    assert set(MOVED) <= set(octopoda.store.__all__)
    assert set(MOVED).isdisjoint(octopoda.__all__)
    assert set(MOVED).isdisjoint(dir(octopoda))


@pytest.mark.parametrize("name", MOVED)
def test_moved_names_still_work_with_a_warning_naming_the_new_place(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"octopoda\.store import {name}\b"):
        value = getattr(octopoda, name)
    assert value is getattr(octopoda.store, name)
    with pytest.warns(DeprecationWarning):  # every access warns: nothing is cached
        exec(f"from octopoda import {name}", {})


def test_the_store_submodule_is_an_attribute_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert octopoda.store is importlib.import_module("octopoda.store")


def test_version_matches_the_distribution() -> None:
    assert octopoda.__version__ == importlib.metadata.version("octopoda-core")


def _modules_loaded_by(code: str) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; return the top-level modules it newly loaded."""
    script = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        f"{code}\n"
        "new = sorted({m.split('.')[0] for m in set(sys.modules) - before})\n"
        "print(json.dumps({'new': new, 'all': sorted(sys.modules)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


def test_an_init_that_finds_nothing_loads_no_typing_threading_or_logging() -> None:
    # (bench 12: such an init() must stay under 5 ms, imports included)
    from octopoda._instrument.discovery import distributions, entry_points

    if entry_points("octopoda.integrations", distributions()):
        pytest.skip("an adapter is installed here: init() has work to do")
    loaded = _modules_loaded_by("import octopoda\nassert octopoda.init().integrations == ()")
    assert {"typing", "threading", "logging", "contextlib"}.isdisjoint(loaded["new"]), loaded["new"]


def test_import_octopoda_loads_no_typing_and_nothing_it_does_not_need() -> None:
    # (bench 5: `import octopoda` costs about 2 ms; typing alone costs 13 ms, for the
    # programs and command-line tools that import octopoda before they need it)
    loaded = _modules_loaded_by("import octopoda")
    assert "typing" not in loaded["new"]
    ours = {m for m in loaded["all"] if m.split(".")[0] == "octopoda"}
    assert ours == {"octopoda", "octopoda._errors", "octopoda._lazy", "octopoda._version"}


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import octopoda", id="import"),
        pytest.param(
            "import octopoda\noctopoda.AgentRuntime('a', store=':memory:').remember('k', 1)",
            id="import-and-remember",
        ),
        pytest.param("import octopoda.store", id="import-the-spi"),
    ],
)
def test_import_loads_only_the_standard_library(code: str) -> None:
    loaded = _modules_loaded_by(code)
    assert "click" not in loaded["new"]
    assert "octopoda.cli" not in loaded["all"]
    third_party = set(loaded["new"]) - set(sys.stdlib_module_names) - {"octopoda"}
    assert third_party == set()  # sqlite3 and the rest of the standard library are fine
