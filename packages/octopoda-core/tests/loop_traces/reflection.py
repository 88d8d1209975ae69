"""Class 4: reflection outside decisions.

An agent rewriting its plan or self-critique in other words into a scratchpad memory key,
or calling a ``think``-style tool again and again with no other progress in between. The
twins think and rewrite just as often, but between the thoughts real work brings new
results, or each thought and note says something new.
"""

_PLANS = [
    "Plan: 1) search flights from Berlin to Lisbon for May 12 2) compare prices across"
    " airlines 3) book the cheapest nonstop flight",
    "Plan: first search Berlin to Lisbon flights for May 12, then compare the airline"
    " prices, then book the cheapest nonstop one",
    "Plan: 1) look up flights from Berlin to Lisbon on May 12 2) compare prices between"
    " airlines 3) book the cheapest nonstop",
]
_CRITIQUES = [
    "Critique: the draft answer ignores the user's budget of 500 euros; revise it.",
    "Critique: the answer ignores the 500 euros budget the user gave, so revise it.",
    "Critique: revise the draft, it ignores the user's budget of 500 euros.",
]
_THOUGHTS = [
    "I should check the database schema before writing the migration.",
    "Before writing the migration I need to check the database schema.",
    "Let me check the schema of the database before I write the migration.",
    "First check the database schema, then write the migration.",
]
_FLAKY = [
    "The flaky test probably fails because of a race between the cache warmup and the"
    " first request.",
    "Likely the flaky test fails due to a race between cache warmup and the first request.",
    "The flaky test most likely fails from a race between the cache warmup and the first request.",
]


_SUMMARY = (
    "Summary: the user runs a small design studio, wants shared memory for its agents,"
    " asked about pricing plans, seats, the hosted dashboard"
)


def _sequential(thought, number):
    return {
        "thought": thought,
        "thoughtNumber": number,
        "totalThoughts": 6,
        "nextThoughtNeeded": True,
    }


TRACES = [
    {
        "name": "scratchpad-plan-rewritten-in-other-words",
        "story": "A travel agent rewrites its plan into the scratchpad three times, in new"
        " words each time, between model calls, and never searches.",
        "agents": ["travel"],
        "expect": {"reflection"},
        "twin": "plan-rewritten-after-each-step",
        "steps": [
            ("recall", "request"),
            ("llm", "gpt-4o"),
            ("remember*", "scratchpad/plan", _PLANS[0]),
            ("llm", "gpt-4o"),
            ("recall", "scratchpad/plan"),
            ("llm", "gpt-4o"),
            ("remember*", "scratchpad/plan", _PLANS[1]),
            ("wait", 6),
            ("llm", "gpt-4o"),
            ("remember*", "scratchpad/plan", _PLANS[2]),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "plan-rewritten-after-each-step",
        "story": "The same agent rewrites its plan as often, but after each step it took:"
        " the search found flights, the comparison found the cheapest.",
        "agents": ["travel"],
        "expect": set(),
        "twin": "scratchpad-plan-rewritten-in-other-words",
        "steps": [
            ("recall", "request"),
            ("llm", "gpt-4o"),
            ("remember", "scratchpad/plan", _PLANS[0]),
            (
                "tool",
                "search_flights",
                {"from": "BER", "to": "LIS", "date": "2025-05-12"},
                [{"flight": "TP 541", "price": 189}, {"flight": "FR 1234", "price": 74}],
            ),
            ("llm", "gpt-4o"),
            ("remember", "scratchpad/plan", _PLANS[1]),
            (
                "tool",
                "compare_fares",
                {"flights": ["TP 541", "FR 1234"]},
                {"cheapest": "FR 1234", "nonstop": True},
            ),
            ("llm", "gpt-4o"),
            ("remember", "scratchpad/plan", _PLANS[2]),
            ("tool", "book", {"flight": "FR 1234"}, {"booking": "QX7P2L", "status": "confirmed"}),
        ],
    },
    {
        "name": "self-critique-rewritten",
        "story": "A writing agent stores its self-critique, then stores it again twice in"
        " other words without revising the draft.",
        "agents": ["writer"],
        "expect": {"reflection"},
        "twin": "self-critique-finds-new-issues",
        "steps": [
            ("llm", "claude-sonnet-4"),
            ("remember", "draft", "Here are three hotels near the old town, from 180 euros."),
            ("llm", "claude-sonnet-4"),
            ("remember*", "critique", _CRITIQUES[0]),
            ("llm", "claude-sonnet-4"),
            ("recall", "draft"),
            ("remember*", "critique", _CRITIQUES[1]),
            ("llm", "claude-sonnet-4"),
            ("remember*", "critique", _CRITIQUES[2]),
            ("llm", "claude-sonnet-4"),
        ],
    },
    {
        "name": "self-critique-finds-new-issues",
        "story": "The same self-critique key, rewritten three times, but each critique names"
        " another problem.",
        "agents": ["writer"],
        "expect": set(),
        "twin": "self-critique-rewritten",
        "steps": [
            ("llm", "claude-sonnet-4"),
            ("remember", "draft", "Here are three hotels near the old town, from 180 euros."),
            ("llm", "claude-sonnet-4"),
            ("remember", "critique", _CRITIQUES[0]),
            ("llm", "claude-sonnet-4"),
            ("recall", "draft"),
            ("remember", "critique", "Critique: no hotel has the parking the user asked for."),
            ("llm", "claude-sonnet-4"),
            ("remember", "critique", "Critique: the dates are missing; ask for check-in."),
            ("llm", "claude-sonnet-4"),
        ],
    },
    {
        "name": "think-tool-loop",
        "story": "A coding agent calls its think tool four times with the same thought in"
        " other words, and never looks at the schema.",
        "agents": ["coder"],
        "expect": {"reflection"},
        "twin": "think-between-real-work",
        "steps": [
            ("llm", "claude-sonnet-4"),
            ("tool*", "think", {"thought": _THOUGHTS[0]}, None),
            ("llm", "claude-sonnet-4"),
            ("tool*", "think", {"thought": _THOUGHTS[1]}, None),
            ("recall", "task"),
            ("llm", "claude-sonnet-4"),
            ("tool*", "think", {"thought": _THOUGHTS[2]}, None),
            ("llm", "claude-sonnet-4"),
            ("tool*", "think", {"thought": _THOUGHTS[3]}, None),
            ("llm", "claude-sonnet-4"),
        ],
    },
    {
        "name": "think-between-real-work",
        "story": "The same think tool, called as often, but after each thought the agent"
        " acts and learns something new.",
        "agents": ["coder"],
        "expect": set(),
        "twin": "think-tool-loop",
        "steps": [
            ("llm", "claude-sonnet-4"),
            ("tool", "think", {"thought": _THOUGHTS[0]}, None),
            (
                "tool",
                "bash",
                {"command": "psql -c '\\d orders'"},
                "Table orders: id bigint, customer_id bigint, total numeric(10,2)",
            ),
            ("llm", "claude-sonnet-4"),
            ("tool", "think", {"thought": _THOUGHTS[1]}, None),
            (
                "tool",
                "bash",
                {"command": "psql -c '\\d customers'"},
                "Table customers: id bigint, email text, created_at timestamptz",
            ),
            ("llm", "claude-sonnet-4"),
            ("tool", "think", {"thought": _THOUGHTS[2]}, None),
            (
                "tool",
                "write_file",
                {
                    "path": "migrations/0042_add_region.sql",
                    "content": "ALTER TABLE orders ADD region text;",
                },
                "ok",
            ),
            ("llm", "claude-sonnet-4"),
            ("tool", "think", {"thought": _THOUGHTS[3]}, None),
            ("tool", "bash", {"command": "alembic upgrade head"}, "Running upgrade 0041 -> 0042"),
        ],
    },
    {
        "name": "sequential-thinking-stuck",
        "story": "An agent using a sequential-thinking tool numbers its thoughts, but thoughts"
        " 2, 3 and 4 restate the same hypothesis about a flaky test.",
        "agents": ["debugger"],
        "expect": {"reflection"},
        "twin": "sequential-thinking-progresses",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "tool",
                "sequentialthinking",
                _sequential("The test fails on CI roughly one run in five.", 1),
                None,
            ),
            ("llm", "gpt-4o"),
            ("tool*", "sequentialthinking", _sequential(_FLAKY[0], 2), None),
            ("llm", "gpt-4o"),
            ("tool*", "sequentialthinking", _sequential(_FLAKY[1], 3), None),
            ("wait", 8),
            ("llm", "gpt-4o"),
            ("tool*", "sequentialthinking", _sequential(_FLAKY[2], 4), None),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "sequential-thinking-progresses",
        "story": "The same tool, with a chain of thoughts that moves from symptom to cause to"
        " a fix.",
        "agents": ["debugger"],
        "expect": set(),
        "twin": "sequential-thinking-stuck",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "tool",
                "sequentialthinking",
                _sequential("The test fails on CI roughly one run in five.", 1),
                None,
            ),
            ("llm", "gpt-4o"),
            ("tool", "sequentialthinking", _sequential(_FLAKY[0], 2), None),
            ("llm", "gpt-4o"),
            (
                "tool",
                "sequentialthinking",
                _sequential("If so, awaiting the warmup in the fixture should remove it.", 3),
                None,
            ),
            ("wait", 8),
            ("llm", "gpt-4o"),
            (
                "tool",
                "sequentialthinking",
                _sequential("Plan: add an await in conftest.py, rerun twenty times.", 4),
                None,
            ),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "reflect-tool-between-reads-and-waits",
        "story": "A support agent calls a reflect tool three times saying it must escalate,"
        " with only memory reads, model calls and short waits in between.",
        "agents": ["support"],
        "expect": {"reflection"},
        "twin": "running-notes-with-new-findings",
        "steps": [
            ("recall", "ticket/9001"),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "reflect",
                {
                    "reflection": "This refund is above my limit, so I should"
                    " escalate ticket 9001 to a human."
                },
                "noted",
            ),
            ("wait", 12),
            ("recall", "policy/refunds"),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "reflect",
                {
                    "reflection": "The refund is above my limit; I should"
                    " escalate ticket 9001 to a human."
                },
                "noted",
            ),
            ("wait", 12),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "reflect",
                {
                    "reflection": "Ticket 9001 needs escalating to a human:"
                    " this refund is above my limit."
                },
                "noted",
            ),
            ("llm", "gpt-4o-mini"),
        ],
    },
    {
        "name": "running-notes-with-new-findings",
        "story": "An investigation agent keeps running notes in one scratchpad key, with no"
        " tool call in between, but every note records a different finding.",
        "agents": ["investigator"],
        "expect": set(),
        "twin": "reflect-tool-between-reads-and-waits",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "remember",
                "scratchpad/notes",
                "Found that the cache is invalidated on every deploy.",
            ),
            ("llm", "gpt-4o"),
            (
                "remember",
                "scratchpad/notes",
                "Found that the queue consumer crashes on malformed JSON.",
            ),
            ("llm", "gpt-4o"),
            (
                "remember",
                "scratchpad/notes",
                "Found that the retry budget is shared across tenants.",
            ),
            ("llm", "gpt-4o"),
            ("tool", "reflect", {"reflection": "Three separate causes; write them up."}, "noted"),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "decisions-retaken-on-new-facts",
        "story": "A trading agent restates its decision to hold, in other words, after each"
        " new quote: the decision is re-taken on new facts (and a plan note is updated the"
        " same way).",
        "agents": ["trader"],
        "expect": set(),
        "twin": "self-critique-rewritten",
        "steps": [
            step
            for price, text in (
                (101.25, "Hold the position and check the market again later."),
                (99.5, "Keep holding the position; check the market again later."),
                (102.75, "Hold the position for now and recheck the market later."),
            )
            for step in (
                ("tool", "get_quote", {"symbol": "ACME"}, {"symbol": "ACME", "price": price}),
                ("llm", "gpt-4o"),
                ("decide", text, "acme"),
                ("remember", "scratchpad/acme", text),
            )
        ],
    },
    {
        "name": "running-summary-grows-each-turn",
        "story": "A chat agent keeps a running summary of the conversation in memory and"
        " rewrites it after every turn, with only model calls in between; each version keeps"
        " what the last one said and adds the new turn (a summary that grows is news).",
        "agents": ["chat"],
        "expect": set(),
        "twin": "scratchpad-plan-rewritten-in-other-words",
        "steps": [
            step
            for summary in (
                _SUMMARY + ".",
                _SUMMARY + ", refunds.",
                _SUMMARY + ", refunds, invoice tax.",
                _SUMMARY + ", refunds, invoice tax, data retention.",
            )
            for step in (
                ("recall", "summary"),
                ("llm", "gpt-4o-mini"),
                ("llm", "gpt-4o-mini"),
                ("remember", "summary", summary),
            )
        ],
    },
]
