"""An unmodified LangChain program: an agent whose scripted model keeps calling a failing
tool (a retry loop). It knows nothing of Octopoda; ``init_run.py`` runs it with the
integration activated, or ``octopoda-run`` does.

    python loop_script.py [THREAD [HOW]]   # HOW: invoke (default) or astream; prints one
                                           # JSON line: {"outcome": ..., "model_calls": n}
"""

from __future__ import annotations

import asyncio
import json
import sys

from langchain_core.messages import HumanMessage
from langchain_core.tools import ToolException, tool
from octopoda_langchain.testing import ScriptedChatModel, tool_call


@tool
def fetch(city: str) -> str:
    """Fetch the weather of a city."""
    raise ToolException(f"HTTP 503 for {city}")


fetch.handle_tool_error = True


class CountingModel(ScriptedChatModel):
    calls: int = 0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super()._generate(messages, stop, run_manager, **kwargs)


def make_agent(model):  # type: ignore[no-untyped-def]
    try:
        from langchain.agents import create_agent
    except ImportError:  # langchain-core 0.3 lines: LangGraph's prebuilt agent
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, [fetch])
    return create_agent(model, tools=[fetch])


async def streamed(agent, question, config):  # type: ignore[no-untyped-def]
    last = None
    async for state in agent.astream(question, config, stream_mode="values"):
        last = state
    return last


def main(thread: str | None, how: str = "invoke") -> dict[str, object]:
    model = CountingModel(script=[tool_call("fetch", {"city": "Paris"})])  # forever
    agent = make_agent(model)
    config: dict[str, object] = {"recursion_limit": 40}
    if thread:
        config["configurable"] = {"thread_id": thread}
    question = {"messages": [HumanMessage("Weather in Paris?")]}
    try:
        if how == "astream":
            result = asyncio.run(streamed(agent, question, config))
        else:
            result = agent.invoke(question, config)
        outcome = f"answer: {result['messages'][-1].content}"
    except Exception as exc:  # what a user's script would print
        outcome = f"{type(exc).__name__}: {exc}"
    return {"outcome": outcome, "model_calls": model.calls}


if __name__ == "__main__":
    print(json.dumps(main(*(sys.argv[1:3] or [None]))))
