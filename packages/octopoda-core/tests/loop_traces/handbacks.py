"""Class 3: rings and reworded hand-backs.

A task passed around three agents and back to the first, cycling, each agent wording its
note its own way; a planner and an executor (or a manager and a worker) handing one task
back and forth in reworded messages. The twins pass the same kind of things around while
each agent does new work, or while the tickets and tasks themselves change.
"""

_PLANNER = [
    "Implement the CSV export for the reports page.",
    "Please implement the CSV export on the reports page.",
    "Go ahead and implement the CSV export for the reports page.",
]
_EXECUTOR = [
    "I can't implement the CSV export without the column list for the reports page.",
    "Without the column list I cannot build the CSV export for the reports page.",
    "I can't implement the CSV export for the reports page without the column list.",
]
_MANAGER = [
    "Please send a status update on the migration.",
    "Can you send a status update on the migration?",
    "Send me a status update on the migration, please.",
]
_WORKER = [
    "Still waiting on the DBA to approve the migration.",
    "The migration is still waiting for DBA approval.",
    "Still waiting for the DBA to approve the migration.",
]

TRACES = [
    {
        "name": "ticket-ring-reworded-notes",
        "story": "Triage hands ticket 4211 to billing, billing to tech, tech back to triage;"
        " each agent words its note its own way, and the ticket goes around again.",
        "agents": ["triage", "billing", "tech"],
        "expect": {"ping_pong"},
        "twin": "ticket-ring-each-agent-works",
        "steps": [
            step
            for notes in (
                (
                    "Customer says they were charged twice; passing to billing.",
                    "Not a billing issue, looks like a login problem; over to tech.",
                    "No auth errors on our side; sending back to triage.",
                ),
                (
                    "Charged twice per the customer, billing please take it.",
                    "Nothing wrong with the invoices, tech should check the login.",
                    "Login works fine for this account; back to triage.",
                ),
                (
                    "Billing, this is a double charge, please handle.",
                    "Invoices look fine; handing to tech for the login side.",
                    "Not a tech issue; returning to triage.",
                ),
            )
            for step in (
                ("triage:llm", "gpt-4o-mini"),
                ("triage:handoff*", "billing", {"ticket": 4211, "note": notes[0]}),
                ("billing:recall", "ticket/4211"),
                ("billing:llm", "gpt-4o-mini"),
                ("billing:handoff*", "tech", {"ticket": 4211, "note": notes[1]}),
                ("tech:llm", "gpt-4o-mini"),
                ("tech:handoff*", "triage", {"ticket": 4211, "note": notes[2]}),
            )
        ],
    },
    {
        "name": "ticket-ring-each-agent-works",
        "story": "The same ring, but each agent works the ticket before passing it on:"
        " billing finds the duplicate charge and refunds it, tech resets the session, and"
        " triage closes the ticket after its second round.",
        "agents": ["triage", "billing", "tech"],
        "expect": set(),
        "twin": "ticket-ring-reworded-notes",
        "steps": [
            ("triage:tool", "get_ticket", {"id": 4211}, {"id": 4211, "text": "charged twice"}),
            ("triage:handoff", "billing", {"ticket": 4211, "note": "Charged twice; billing."}),
            (
                "billing:tool",
                "list_charges",
                {"ticket": 4211},
                [{"id": "ch_1", "amount": 4900}, {"id": "ch_2", "amount": 4900}],
            ),
            ("billing:handoff", "tech", {"ticket": 4211, "note": "Two charges; check login."}),
            ("tech:tool", "auth_log", {"ticket": 4211}, [{"event": "double submit", "ms": 40}]),
            ("tech:handoff", "triage", {"ticket": 4211, "note": "Double submit; back to you."}),
            (
                "triage:tool",
                "reply",
                {"ticket": 4211, "text": "We are refunding one charge"},
                {"sent": True, "message_id": "m-88"},
            ),
            ("triage:handoff", "billing", {"ticket": 4211, "note": "Please refund ch_2."}),
            ("billing:tool", "refund", {"charge": "ch_2"}, {"refund": "re_9", "amount": 4900}),
            ("billing:handoff", "tech", {"ticket": 4211, "note": "Refunded; fix the button."}),
            ("tech:tool", "open_issue", {"title": "Debounce the pay button"}, {"number": 312}),
            ("tech:handoff", "triage", {"ticket": 4211, "note": "Issue 312 filed; done."}),
            ("triage:tool", "close_ticket", {"id": 4211}, {"id": 4211, "state": "closed"}),
        ],
    },
    {
        "name": "tickets-through-a-three-agent-pipeline",
        "story": "Triage, billing and tech pass tickets along a fixed pipeline with the same"
        " notes each time, but every ticket is a new one.",
        "agents": ["triage", "billing", "tech"],
        "expect": set(),
        "twin": "ticket-ring-reworded-notes",
        "steps": [
            step
            for ticket in (4211, 4212, 4213, 4214)
            for step in (
                ("triage:handoff", "billing", {"ticket": ticket, "note": "Billing question."}),
                ("billing:handoff", "tech", {"ticket": ticket, "note": "Needs a tech check."}),
                ("tech:handoff", "triage", {"ticket": ticket, "note": "Checked, back to you."}),
            )
        ],
    },
    {
        "name": "planner-executor-reworded-handbacks",
        "story": "A planner keeps handing the CSV export task to the executor in new words;"
        " the executor keeps handing it back, in new words, for want of the column list.",
        "agents": ["planner", "executor"],
        "expect": {"ping_pong"},
        "twin": "planner-executor-with-progress",
        "steps": [
            step
            for n in range(3)
            for step in (
                ("planner:llm", "gpt-4o"),
                ("planner:handoff*", "executor", _PLANNER[n]),
                ("executor:recall", "repo/layout"),
                ("executor:llm", "gpt-4o"),
                ("executor:handoff*", "planner", _EXECUTOR[n]),
            )
        ],
    },
    {
        "name": "planner-executor-with-progress",
        "story": "The same pair handing work back and forth, but the executor does each"
        " task (new files, new test results) and the planner's next task is another one.",
        "agents": ["planner", "executor"],
        "expect": set(),
        "twin": "planner-executor-reworded-handbacks",
        "steps": [
            step
            for task, path, tests in (
                ("Implement the CSV export for the reports page.", "reports/export.py", 41),
                ("Add a download button to the reports page.", "reports/button.tsx", 43),
                ("Add an end-to-end test for the export.", "e2e/export.spec.ts", 44),
            )
            for step in (
                ("planner:llm", "gpt-4o"),
                ("planner:handoff", "executor", task),
                ("executor:llm", "gpt-4o"),
                ("executor:tool", "write_file", {"path": path, "content": f"# {task}"}, "ok"),
                ("executor:tool", "bash", {"command": "pytest -q"}, f"{tests} passed in 2.1s"),
                ("executor:handoff", "planner", f"Done: {task} ({tests} tests pass)"),
            )
        ],
    },
    {
        "name": "manager-worker-status-messages",
        "story": "A manager agent asks for a status update in new words each time and reads"
        " the worker's reply; the worker, blocked, says the same in new words.",
        "agents": ["manager", "worker"],
        "expect": {"ping_pong"},
        "twin": "manager-worker-status-progresses",
        "steps": [
            step
            for n in range(3)
            for step in (
                ("manager:llm", "gpt-4o-mini"),
                ("manager:send*", "worker", _MANAGER[n]),
                ("worker:read",),
                ("worker:llm", "gpt-4o-mini"),
                ("worker:send*", "manager", _WORKER[n]),
                ("manager:read",),
                ("wait", 20),
            )
        ],
    },
    {
        "name": "manager-worker-status-progresses",
        "story": "The same status exchange while the worker migrates table after table and"
        " says how far it got.",
        "agents": ["manager", "worker"],
        "expect": set(),
        "twin": "manager-worker-status-messages",
        "steps": [
            step
            for n, done in enumerate((3, 7, 12))
            for step in (
                ("manager:llm", "gpt-4o-mini"),
                ("manager:send", "worker", _MANAGER[n]),
                ("worker:read",),
                ("worker:tool", "migrate_tables", {"batch": n}, {"migrated": done, "of": 12}),
                ("worker:send", "manager", f"Migrated {done} of 12 tables."),
                ("manager:read",),
                ("wait", 20),
            )
        ],
    },
    {
        "name": "review-ring-reworded-notes",
        "story": "A writer, a reviewer and an editor circulate the Q3 report by its id,"
        " each adding a note in its own words, and nobody changes the report.",
        "agents": ["writer", "reviewer", "editor"],
        "expect": {"ping_pong"},
        "twin": "review-ring-with-edits",
        "steps": [
            step
            for notes in (
                (
                    "Draft ready for review.",
                    "Reviewed, editor please check style.",
                    "Style is fine, writer should look again.",
                ),
                (
                    "Ready for another look.",
                    "Looks okay to me, over to the editor.",
                    "No style issues, back to the writer.",
                ),
                (
                    "Please review once more.",
                    "Reviewed again, editor next.",
                    "Style checked, returning it to the writer.",
                ),
            )
            for step in (
                ("writer:llm", "claude-sonnet-4"),
                ("writer:handoff*", "reviewer", {"doc": "q3-report-v2", "note": notes[0]}),
                ("reviewer:llm", "claude-sonnet-4"),
                ("reviewer:handoff*", "editor", {"doc": "q3-report-v2", "note": notes[1]}),
                ("editor:llm", "claude-sonnet-4"),
                ("editor:handoff*", "writer", {"doc": "q3-report-v2", "note": notes[2]}),
            )
        ],
    },
    {
        "name": "review-ring-with-edits",
        "story": "The same circulation, but each round the writer edits the report, the"
        " reviewer reads the new text and the editor lints it (review cycles that change"
        " the document).",
        "agents": ["writer", "reviewer", "editor"],
        "expect": set(),
        "twin": "review-ring-reworded-notes",
        "steps": [
            step
            for rnd, text in enumerate(
                (
                    "Q3 revenue grew 12%.",
                    "Q3 revenue grew 12%, led by EMEA.",
                    "Q3 revenue grew 12%, led by EMEA; churn fell to 2.1%.",
                )
            )
            for step in (
                ("writer:tool", "write_file", {"path": "q3.md", "content": text}, "ok"),
                ("writer:handoff", "reviewer", {"doc": "q3-report-v2", "note": "Please review."}),
                ("reviewer:tool", "read_file", {"path": "q3.md"}, text),
                ("reviewer:handoff", "editor", {"doc": "q3-report-v2", "note": "Reviewed."}),
                (
                    "editor:tool",
                    "lint_prose",
                    {"path": "q3.md"},
                    {"warnings": rnd, "words": len(text)},
                ),
                ("editor:handoff", "writer", {"doc": "q3-report-v2", "note": "Style checked."}),
            )
        ],
    },
]
