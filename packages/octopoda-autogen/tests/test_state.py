"""OctopodaTeamState: a team's save_state() kept as versions, restored into a new team."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from octopoda_autogen import OctopodaTeamState

from octopoda import NotFound

pytestmark = pytest.mark.replay


def team(*answers: str) -> RoundRobinGroupChat:
    import scripted

    agent = AssistantAgent("helper", model_client=scripted.client(*answers))
    return RoundRobinGroupChat([agent], termination_condition=TextMentionTermination("DONE"))


def test_team_state_is_versioned_and_restores_into_a_new_team(store: Any) -> None:
    async def scenario() -> tuple[Any, Any, OctopodaTeamState]:
        first = team("Noted. DONE", "Second. DONE")
        keeper = OctopodaTeamState("support", store)
        assert not await keeper.load(first)  # nothing saved yet
        await first.run(task="Remember the number 7")
        await keeper.save(first)
        await first.run(task="And 8")
        await keeper.save(first)
        saved = await first.save_state()
        restored = team()
        await OctopodaTeamState("support", store).load(restored)
        older = team()
        await keeper.load(older, version=1)
        return saved, (await restored.save_state(), await older.save_state()), keeper

    saved, (restored, older), keeper = asyncio.run(scenario())
    assert restored == saved
    assert older != saved and "Noted. DONE" in str(older) and "Second" not in str(older)
    assert [v.version for v in keeper.history()] == [2, 1]
    assert keeper.runtime.audit.verify().ok
    with pytest.raises(NotFound, match="has no version 9"):
        asyncio.run(keeper.load(team(), version=9))
