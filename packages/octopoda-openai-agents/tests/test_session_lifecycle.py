"""OctopodaSession where SQLiteSession draws a line: with session settings it does not know
(the Agents SDK's own tests found it)."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import pytest
from agents import SQLiteSession
from octopoda_openai_agents import InvalidSessionSettings, OctopodaSession

from octopoda import InvalidInput

SDK = tuple(int(p) for p in version("openai-agents").split(".")[:2])
# SQLiteSession checks session_settings in the tested 0.20 and 0.24; 0.8.x keeps whatever
# settings it is given.
SDK_CHECKS = pytest.mark.skipif(SDK < (0, 20), reason="SQLiteSession checks this from 0.20")


# -- session_settings --------------------------------------------------------------------------


def test_an_unknown_session_setting_is_a_type_error(store: Any) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt") as caught:
        OctopodaSession("s", store, session_settings={"limitt": 1, "limit": 2})
    assert isinstance(caught.value, InvalidSessionSettings)
    assert isinstance(caught.value, InvalidInput)  # an OctopodaError too
    assert "SessionSettings takes limit" in str(caught.value)  # what to write instead
    assert store.agents() == []  # nothing was written


@pytest.mark.parametrize("bad", [5, "limit=3", [("limit", 3)]])
def test_session_settings_of_another_type_are_a_type_error(store: Any, bad: Any) -> None:
    with pytest.raises(InvalidSessionSettings, match="must be a SessionSettings, a dict or None"):
        OctopodaSession("s", store, session_settings=bad)


@SDK_CHECKS
@pytest.mark.parametrize("bad", [{"limitt": 1}, 5])
def test_bad_session_settings_raise_what_sqlite_session_raises(store: Any, bad: Any) -> None:
    with pytest.raises(TypeError) as sdk:
        SQLiteSession("s", session_settings=bad)
    with pytest.raises(TypeError) as ours:
        OctopodaSession("s", store, session_settings=bad)
    if isinstance(bad, dict):  # the same words, then what to write instead
        assert str(ours.value).startswith(f"{sdk.value};")


def test_a_known_setting_with_a_bad_value_stays_a_value_error(store: Any) -> None:
    with pytest.raises(InvalidInput, match="is not valid") as caught:
        OctopodaSession("s", store, session_settings={"limit": "many"})
    assert isinstance(caught.value, ValueError)
    assert not isinstance(caught.value, TypeError)
