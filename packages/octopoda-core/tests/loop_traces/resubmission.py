"""Class 5: a document that never changes while the comments do.

A writer re-submits the same draft after each reworded review comment; reading the comment
used to reset the writer's chain, so the unchanged resubmission was never seen. The twins
are review cycles that change the document.
"""

_DRAFT = (
    "Octopoda is the memory, loop-detection and audit layer under AI agents. This post"
    " walks through how it stores versions, detects loops without a model, and proves"
    " every write with a hash chain. We start with a two-minute quickstart."
)
_REVISIONS = [
    _DRAFT,
    "Octopoda gives AI agents memory, loop detection and an audit trail. This post shows"
    " how versions are stored, how loops are caught and how writes are proven.",
    "Octopoda: memory, loop detection and audit for agents. Below: versions, loops, proofs.",
]
_COMMENTS = [
    "The introduction is too long; please cut it to two sentences.",
    "Please shorten the introduction to two sentences, it is still too long.",
    "The introduction is still too long: cut it to two sentences.",
]
_PATCH = (
    "diff --git a/src/cache.py b/src/cache.py\n@@ -10,7 +10,7 @@ def get(key):\n"
    "-    return store[key]\n+    return store.get(key)\n"
)

TRACES = [
    {
        "name": "writer-resubmits-the-same-draft",
        "story": "A writer hands its draft to the reviewer, reads each review comment (the"
        " same request in new words), and hands back the very same draft every time.",
        "agents": ["writer", "reviewer"],
        "expect": {"ping_pong"},
        "twin": "writer-revises-after-each-comment",
        "steps": [
            step
            for n in range(3)
            for step in (
                ("writer:llm", "claude-sonnet-4"),
                ("writer:handoff*", "reviewer", _DRAFT),
                ("reviewer:read",),
                ("reviewer:llm", "claude-sonnet-4"),
                ("reviewer:handoff*", "writer", _COMMENTS[n]),
                ("writer:read",),
                ("writer:recall", "style_guide"),
            )
        ],
    },
    {
        "name": "writer-revises-after-each-comment",
        "story": "The same review cycle, but the writer revises the draft after each comment"
        " (a review cycle that changes the document).",
        "agents": ["writer", "reviewer"],
        "expect": set(),
        "twin": "writer-resubmits-the-same-draft",
        "steps": [
            step
            for n in range(3)
            for step in (
                ("writer:llm", "claude-sonnet-4"),
                ("writer:handoff", "reviewer", _REVISIONS[n]),
                ("reviewer:read",),
                ("reviewer:llm", "claude-sonnet-4"),
                ("reviewer:handoff", "writer", _COMMENTS[n]),
                ("writer:read",),
                ("writer:recall", "style_guide"),
            )
        ],
    },
    {
        "name": "review-tool-same-draft-reworded-verdicts",
        "story": "A single agent submits its post to a review tool, rereads its draft file,"
        " and submits the unchanged draft again; the reviewer tool answers in new words.",
        "agents": ["blogger"],
        "expect": {"oscillation"},
        "twin": "review-tool-revised-drafts",
        "steps": [
            step
            for n in range(3)
            for step in (
                ("llm", "gpt-4o"),
                (
                    "tool*",
                    "submit_for_review",
                    {"post": "launch-post", "draft": _DRAFT},
                    {"status": "changes_requested", "comment": _COMMENTS[n]},
                ),
                ("llm", "gpt-4o"),
                ("tool*", "read_file", {"path": "posts/launch.md"}, _DRAFT),
            )
        ],
    },
    {
        "name": "review-tool-revised-drafts",
        "story": "The same tool, but the agent revises the draft before each submission, and"
        " the last one is approved.",
        "agents": ["blogger"],
        "expect": set(),
        "twin": "review-tool-same-draft-reworded-verdicts",
        "steps": [
            step
            for n in range(3)
            for step in (
                ("llm", "gpt-4o"),
                (
                    "tool",
                    "submit_for_review",
                    {"post": "launch-post", "draft": _REVISIONS[n]},
                    {
                        "status": "approved" if n == 2 else "changes_requested",
                        "comment": "Ship it." if n == 2 else _COMMENTS[n],
                    },
                ),
                ("llm", "gpt-4o"),
                ("tool", "read_file", {"path": "posts/launch.md"}, _REVISIONS[n]),
            )
        ],
    },
    {
        "name": "coder-resends-the-same-patch",
        "story": "A coding agent sends the same patch to a reviewer agent after each of its"
        " replies, which ask for a test in new words each time.",
        "agents": ["coder", "reviewer-bot"],
        "expect": {"ping_pong"},
        "twin": "coder-sends-fixed-patches",
        "steps": [
            step
            for reply in (
                "Please add a test for the missing-key case before merging.",
                "Add a test for the missing key case, then this can merge.",
                "Before merging, please add a test covering the missing-key case.",
            )
            for step in (
                ("coder:llm", "gpt-4o"),
                ("coder:send*", "reviewer-bot", {"pr": 88, "patch": _PATCH}),
                ("reviewer-bot:read",),
                ("reviewer-bot:llm", "gpt-4o"),
                ("reviewer-bot:send*", "coder", reply),
                ("coder:read",),
            )
        ],
    },
    {
        "name": "coder-sends-fixed-patches",
        "story": "The same exchange, but each reply gets a new patch, the last one with the"
        " test the reviewer asked for.",
        "agents": ["coder", "reviewer-bot"],
        "expect": set(),
        "twin": "coder-resends-the-same-patch",
        "steps": [
            step
            for n, reply in enumerate(
                (
                    "Please add a test for the missing-key case before merging.",
                    "The test is there but it does not assert the default value.",
                    "Looks good, approved.",
                )
            )
            for step in (
                ("coder:llm", "gpt-4o"),
                (
                    "coder:send",
                    "reviewer-bot",
                    {"pr": 88, "patch": _PATCH + "+# test" * n, "revision": n + 1},
                ),
                ("reviewer-bot:read",),
                ("reviewer-bot:llm", "gpt-4o"),
                ("reviewer-bot:send", "coder", reply),
                ("coder:read",),
            )
        ],
    },
]
