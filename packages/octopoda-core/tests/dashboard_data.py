"""A store filled by real runtime calls for the dashboard's tests (and its browser tests):
memory with several versions and tags, a decision, a goal, messages, a run with LLM and
tool calls and a handoff, a retry loop that paused an agent, and a conflict in a shared
space. ``fill(path)`` returns what the tests look for."""

from __future__ import annotations

from typing import Any

from octopoda import LoopPolicy, Octopoda


def fill(path: str) -> dict[str, Any]:
    with Octopoda(path) as client:
        researcher = client.agent("researcher")
        researcher.remember("user", {"name": "Alice", "city": "Paris"}, tags=["profile"])
        researcher.remember("user", {"name": "Alicia", "city": "Paris"}, tags=["profile"])
        researcher.remember("user", {"name": "Alicia", "city": "Lyon"}, tags=["profile"])
        researcher.remember("diet", "vegetarian: eats no meat", tags=["profile", "food"])
        researcher.remember("plan", {"tier": "pro", "seats": 5})
        researcher.remember("scratch", "to be forgotten")
        decision = researcher.log_decision(
            "Recommend the vegetarian menu", reasoning="the user eats no meat", context={"n": 1}
        )
        researcher.set_goal("Plan the dinner", ["find a venue", "book it"])
        researcher.update_progress(milestone_index=0, note="venue found")
        researcher.record_llm_call(
            "gpt-test",
            cost_usd=0.0125,
            tokens_in=120,
            tokens_out=40,
            run_id="thread-1",
            duration_ms=350.0,
        )
        researcher.record_tool_call(
            "lookup",
            {"q": "venues in Lyon"},
            result=["Chez Paul"],
            run_id="thread-1",
            duration_ms=80.0,
        )
        researcher.record_handoff("writer", {"task": "write the invite"}, run_id="thread-1")
        researcher.send_message("writer", "the venue is Chez Paul")

        writer = client.agent("writer")
        writer.share("menu", "v1: soup", "team")
        researcher.read_shared("menu", "team")
        writer.share("menu", "v2: salad", "team")
        stale = researcher.share("menu", "v3: stew", "team")  # did not see v2: a conflict
        writer.send_message("researcher", "invite written")

        looper = client.agent("looper", policy=LoopPolicy("pause", pause_scope="agent"))
        loop_seqs = []
        for _ in range(3):
            event = looper.record_tool_call(
                "fetch",
                {"url": "http://127.0.0.1:9/items"},
                error="HTTP 503",
                run_id="job-7",
                duration_ms=15.0,
            )
            loop_seqs.append(event.seq)
        assert looper.paused
        return {
            "decision_seq": decision.seq,
            "conflict_id": stale.conflict_id,
            "loop_seqs": loop_seqs,
            "loop_run": "job-7",
        }
