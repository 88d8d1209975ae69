"""``octopoda_process_conversation`` without an LLM: facts a user states in common English
patterns ("my name is", "I prefer", "I work at", "remember that", "we decided") become
memories, in one audited write."""

import hashlib
import re
from typing import Annotated, Any, Final

from pydantic import BaseModel, Field

from .._errors import InvalidInput
from .._runtime.runtime import AgentRuntime
from .convert import plain
from .registry import receipt, tool

METHOD: Final = (
    "rule-based: English statement patterns, no LLM (my X is Y, I like/prefer/love/hate X,"
    " I live in / work at X, remember that X, we decided X)"
)
# a clause: up to punctuation or a following "and"/"but" clause
_END = r"([^.!?;,\n]{1,120}?)(?=\s+(?:and|but)\s|[.!?;,\n]|$)"
_PATTERNS: Final = (
    (re.compile(r"\bmy ([a-z][a-z ]{0,30}?) (?:is|are) " + _END, re.I), "user.{0}"),
    (
        re.compile(r"\bi (?:really )?(like|love|prefer|enjoy|hate|dislike) " + _END, re.I),
        "user.{0}s.{1}",
    ),
    (re.compile(r"\bi (live|work|study) (in|at|for) " + _END, re.I), "user.{0}s_{1}"),
    (re.compile(r"\bremember (?:that )?" + _END, re.I), "note.{hash}"),
    (re.compile(r"\b(?:we|i) (?:have )?decided (?:to |on )?" + _END, re.I), "decision.{hash}"),
)


class Turn(BaseModel):
    role: Annotated[str, Field(description="user, assistant or system")]
    content: Annotated[str, Field(description="what was said")]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40] or "x"


def extract(turns: list[Turn]) -> list[dict[str, Any]]:
    """The facts stated in ``turns`` (user turns; decisions from any turn), in order."""
    found: dict[str, dict[str, Any]] = {}
    for index, turn in enumerate(turns):
        for pattern, template in _PATTERNS:
            is_decision = template.startswith("decision")
            if turn.role.lower() != "user" and not is_decision:
                continue
            for match in pattern.finditer(turn.content):
                groups = [g.strip() for g in match.groups()]
                value = groups[-1]
                digest = hashlib.sha256(value.lower().encode()).hexdigest()[:8]
                slugs = [_slug(g) for g in groups]
                key = template.format(*slugs, hash=digest)
                found[key] = {"key": key, "value": value, "turn": index, "text": match.group(0)}
    return list(found.values())


@tool(title="Process a conversation into memories")
def process_conversation(
    rt: AgentRuntime,
    messages: Annotated[
        list[Turn], Field(description="the conversation turns, oldest first", min_length=1)
    ],
    dry_run: Annotated[bool, Field(description="only show what would be stored")] = False,
) -> dict[str, Any]:
    """Extract facts the user stated in a conversation and store them as memories in one
    audited write. No LLM is used: it recognises common English statements (my X is Y,
    I like/prefer/love/hate X, I live in / work at X, remember that X, we decided X)
    and stores e.g. user.name, user.prefers.dark_mode, note.<id>, decision.<id>.
    Anything else is not extracted: store it yourself with octopoda_remember."""
    if not messages:
        raise InvalidInput("messages must hold at least one turn")
    facts = extract(messages)
    out: dict[str, Any] = {
        "agent_id": rt.agent_id,
        "llm_used": False,
        "method": METHOD,
        "extracted": facts,
        "dry_run": dry_run,
    }
    if dry_run or not facts:
        return out
    tags = ["from_conversation"]
    recs = rt.remember_many([(f["key"], f["value"]) for f in facts], tags=tags)
    out.update(receipt(rt, recs[0].seq))
    out["versions"] = plain({r.key: r.version for r in recs})
    return out
