"""Class 1: the same results under reworded arguments.

A ReAct agent re-issues a search with trivially reworded queries and gets the same results
back; the API echoes the query inside its response. The twins do the same with real
progress: the rewording finds new results, the questions are new, the SQL gets fixed.
"""

_PRICING = [
    {
        "title": "Pricing | Octopoda",
        "url": "https://octopoda.dev/pricing",
        "snippet": "Free for one agent. Team: $29 per month for 10 agents. Enterprise: contact us.",
    },
    {
        "title": "Octopoda Team plan announced",
        "url": "https://blog.octopoda.dev/team-plan",
        "snippet": "The Team plan adds shared spaces and a hosted dashboard.",
    },
    {
        "title": "octopoda - PyPI",
        "url": "https://pypi.org/project/octopoda/",
        "snippet": "Memory, loop detection and audit for AI agents. MIT licensed.",
    },
]


def _search(query, took, results=_PRICING):
    return {"query": query, "took_ms": took, "results": results, "count": len(results)}


def _hits(*names):
    return [
        {"title": n, "url": f"https://docs.example.org/{n.lower().replace(' ', '-')}"}
        for n in names
    ]


_REFUND_CHUNK = {
    "doc": "kb/billing/refunds.md#window",
    "text": "Refunds are possible within 30 days of purchase for annual plans.",
}
_SQL_ERROR = (
    'psycopg.errors.UndefinedColumn: column "revenue" does not exist\n'
    "LINE 1: {query}\n"
    'HINT:  Perhaps you meant to reference the column "sales.amount".'
)
_ROTATE_ANSWER = (
    "Open Settings > API keys, choose Rotate, then update OCTOPODA_API_KEY"
    " in every deployment; the old key keeps working for 24 hours."
)

TRACES = [
    {
        "name": "react-search-reworded-echoing-api",
        "story": "A ReAct agent looking up pricing rewords the same search five times; the"
        " search API echoes the query and its timing, and the hits never change.",
        "agents": ["researcher"],
        "expect": {"retry"},
        "twin": "react-search-reworded-new-results",
        "steps": [
            ("recall", "task"),
            ("llm", "gpt-4o"),
            (
                "tool*",
                "web_search",
                {"query": "octopoda pricing plans", "max_results": 3},
                _search("octopoda pricing plans", 212),
            ),
            ("llm", "gpt-4o"),
            (
                "tool*",
                "web_search",
                {"query": "octopoda pricing", "max_results": 3},
                _search("octopoda pricing", 187),
            ),
            ("llm", "gpt-4o"),
            ("recall", "user_preferences"),
            (
                "tool*",
                "web_search",
                {"query": "pricing plans for octopoda", "max_results": 3},
                _search("pricing plans for octopoda", 240),
            ),
            ("llm", "gpt-4o"),
            (
                "tool*",
                "web_search",
                {"query": "Octopoda plans and pricing", "max_results": 3},
                _search("Octopoda plans and pricing", 198),
            ),
            ("wait", 4),
            ("llm", "gpt-4o"),
            (
                "tool*",
                "web_search",
                {"query": "octopoda pricing plan", "max_results": 3},
                _search("octopoda pricing plan", 176),
            ),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "react-search-reworded-new-results",
        "story": "The same agent rewords its search, and each rewording finds new pages: the"
        " refinement works, and it writes the answer.",
        "agents": ["researcher"],
        "expect": set(),
        "twin": "react-search-reworded-echoing-api",
        "steps": [
            ("recall", "task"),
            ("llm", "gpt-4o"),
            (
                "tool",
                "web_search",
                {"query": "octopoda pricing plans", "max_results": 3},
                _search("octopoda pricing plans", 212, _PRICING[:1]),
            ),
            ("llm", "gpt-4o"),
            (
                "tool",
                "web_search",
                {"query": "octopoda pricing", "max_results": 3},
                _search("octopoda pricing", 187, _PRICING[1:2]),
            ),
            ("llm", "gpt-4o"),
            ("recall", "user_preferences"),
            (
                "tool",
                "web_search",
                {"query": "pricing plans for octopoda", "max_results": 3},
                _search("pricing plans for octopoda", 240, _PRICING[2:]),
            ),
            ("llm", "gpt-4o"),
            (
                "tool",
                "web_search",
                {"query": "Octopoda plans and pricing", "max_results": 3},
                _search("Octopoda plans and pricing", 198, _hits("Enterprise plan FAQ")),
            ),
            ("wait", 4),
            ("llm", "gpt-4o"),
            (
                "tool",
                "web_search",
                {"query": "octopoda pricing plan", "max_results": 3},
                _search("octopoda pricing plan", 176, _hits("Team plan limits", "Seats")),
            ),
            ("llm", "gpt-4o"),
            ("remember", "answer", "Free for one agent; Team is $29/month for 10 agents."),
        ],
    },
    {
        "name": "react-search-and-the-same-top-page",
        "story": "Search, read the top hit, search again in other words, read the same page"
        " again: the agent cycles through two actions that return nothing new.",
        "agents": ["researcher"],
        "expect": {"oscillation"},
        "twin": "react-search-and-new-pages",
        "steps": [
            ("llm", "claude-sonnet-4"),
            (
                "tool*",
                "web_search",
                {"query": "sqlite wal checkpoint starvation"},
                _search("sqlite wal checkpoint starvation", 301, _hits("WAL mode")),
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool*",
                "fetch_page",
                {"url": "https://docs.example.org/wal-mode"},
                "Write-ahead logging: readers do not block writers; checkpoints run when...",
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool*",
                "web_search",
                {"query": "sqlite WAL checkpoint starvation fix"},
                _search("sqlite WAL checkpoint starvation fix", 288, _hits("WAL mode")),
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool*",
                "fetch_page",
                {"url": "https://docs.example.org/wal-mode"},
                "Write-ahead logging: readers do not block writers; checkpoints run when...",
            ),
            ("recall", "notes"),
            ("llm", "claude-sonnet-4"),
            (
                "tool*",
                "web_search",
                {"query": "fix sqlite wal checkpoint starvation"},
                _search("fix sqlite wal checkpoint starvation", 275, _hits("WAL mode")),
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool*",
                "fetch_page",
                {"url": "https://docs.example.org/wal-mode"},
                "Write-ahead logging: readers do not block writers; checkpoints run when...",
            ),
            ("llm", "claude-sonnet-4"),
        ],
    },
    {
        "name": "react-search-and-new-pages",
        "story": "The same search-and-read rhythm, but each search turns up another page and"
        " the agent reads it: research that progresses.",
        "agents": ["researcher"],
        "expect": set(),
        "twin": "react-search-and-the-same-top-page",
        "steps": [
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "web_search",
                {"query": "sqlite wal checkpoint starvation"},
                _search("sqlite wal checkpoint starvation", 301, _hits("WAL mode")),
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "fetch_page",
                {"url": "https://docs.example.org/wal-mode"},
                "Write-ahead logging: readers do not block writers; checkpoints run when...",
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "web_search",
                {"query": "sqlite WAL checkpoint starvation fix"},
                _search(
                    "sqlite WAL checkpoint starvation fix", 288, _hits("Checkpoint starvation")
                ),
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "fetch_page",
                {"url": "https://docs.example.org/checkpoint-starvation"},
                "Checkpoint starvation happens when a reader is always active; use...",
            ),
            ("recall", "notes"),
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "web_search",
                {"query": "fix sqlite wal checkpoint starvation"},
                _search("fix sqlite wal checkpoint starvation", 275, _hits("wal_checkpoint")),
            ),
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "fetch_page",
                {"url": "https://docs.example.org/wal_checkpoint"},
                "PRAGMA wal_checkpoint(TRUNCATE) blocks until readers finish, then...",
            ),
            ("llm", "claude-sonnet-4"),
            ("remember", "notes", "Starvation: a reader always open; fix with TRUNCATE."),
        ],
    },
    {
        "name": "rag-retrieval-rephrased",
        "story": "A support agent keeps rephrasing its retrieval query about refunds; the"
        " vector store echoes the query and returns the same chunk every time.",
        "agents": ["support"],
        "expect": {"retry"},
        "twin": "rag-retrieval-for-new-tickets",
        "steps": [
            ("recall", "ticket/5521"),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "retrieve",
                {"query": "refund policy for annual plans", "top_k": 4},
                {"query": "refund policy for annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            ("recall", "customer/881"),
            (
                "tool*",
                "retrieve",
                {"query": "annual plan refund policy", "top_k": 4},
                {"query": "annual plan refund policy", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "retrieve",
                {"query": "refunds policy annual plans", "top_k": 4},
                {"query": "refunds policy annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            ("recall", "ticket/5521"),
            (
                "tool*",
                "retrieve",
                {"query": "policy on refunds for annual plans", "top_k": 4},
                {"query": "policy on refunds for annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "retrieve",
                {"query": "annual plans refund policy", "top_k": 4},
                {"query": "annual plans refund policy", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
        ],
    },
    {
        "name": "rag-retrieval-for-new-tickets",
        "story": "The same retrieval, reworded each time, for the next ticket in the queue:"
        " each ticket is new, so the same chunk answers a new question (FAQ answers to"
        " different users).",
        "agents": ["support"],
        "expect": set(),
        "twin": "rag-retrieval-rephrased",
        "steps": [
            (
                "tool",
                "get_ticket",
                {"id": 5521},
                {"id": 5521, "from": "ana@example.com", "text": "Can I get a refund?"},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "refund policy for annual plans", "top_k": 4},
                {"query": "refund policy for annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            ("tool", "reply", {"ticket": 5521}, "sent"),
            (
                "tool",
                "get_ticket",
                {"id": 5522},
                {"id": 5522, "from": "li@example.com", "text": "Refund for my yearly plan?"},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "annual plan refund policy", "top_k": 4},
                {"query": "annual plan refund policy", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            ("tool", "reply", {"ticket": 5522}, "sent"),
            (
                "tool",
                "get_ticket",
                {"id": 5523},
                {"id": 5523, "from": "sam@example.com", "text": "Money back on annual?"},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "refunds policy annual plans", "top_k": 4},
                {"query": "refunds policy annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            ("tool", "reply", {"ticket": 5523}, "sent"),
            (
                "tool",
                "get_ticket",
                {"id": 5524},
                {"id": 5524, "from": "kim@example.com", "text": "Refund rules for annual?"},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "policy on refunds for annual plans", "top_k": 4},
                {"query": "policy on refunds for annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            ("tool", "reply", {"ticket": 5524}, "sent"),
        ],
    },
    {
        "name": "faq-same-question-per-user",
        "story": "An FAQ bot answers the same question, worded by each user, with the same"
        " retrieved answer; the user id is part of the call, so these are different calls.",
        "agents": ["faq"],
        "expect": set(),
        "twin": "rag-retrieval-rephrased",
        "steps": [
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "refund policy for annual plans", "user": "u-1"},
                {"query": "refund policy for annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "annual plan refund policy", "user": "u-2"},
                {"query": "annual plan refund policy", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "refunds policy annual plans", "user": "u-3"},
                {"query": "refunds policy annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "policy on refunds for annual plans", "user": "u-4"},
                {"query": "policy on refunds for annual plans", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "retrieve",
                {"query": "annual plans refund policy", "user": "u-5"},
                {"query": "annual plans refund policy", "matches": [_REFUND_CHUNK]},
            ),
            ("llm", "gpt-4o-mini"),
        ],
    },
    {
        "name": "sql-reworded-same-error",
        "story": "A data agent resubmits the same broken query in other spellings (case,"
        " spacing); PostgreSQL fails the same way and echoes the query in the error.",
        "agents": ["analyst"],
        "expect": {"retry"},
        "twin": "sql-reworded-until-fixed",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "fail*",
                "run_sql",
                {"query": "SELECT region, SUM(revenue) FROM sales GROUP BY region"},
                _SQL_ERROR.format(query="SELECT region, SUM(revenue) FROM sales GROUP BY region"),
            ),
            ("llm", "gpt-4o"),
            (
                "fail*",
                "run_sql",
                {"query": "select region, sum(revenue) from sales group by region"},
                _SQL_ERROR.format(query="select region, sum(revenue) from sales group by region"),
            ),
            ("llm", "gpt-4o"),
            ("recall", "schema/sales"),
            (
                "fail*",
                "run_sql",
                {"query": "SELECT region, sum(revenue) FROM sales GROUP BY region;"},
                _SQL_ERROR.format(query="SELECT region, sum(revenue) FROM sales GROUP BY region;"),
            ),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "sql-reworded-until-fixed",
        "story": "The same agent rewrites its query after each error; the error changes, and"
        " the third version runs.",
        "agents": ["analyst"],
        "expect": set(),
        "twin": "sql-reworded-same-error",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "fail",
                "run_sql",
                {"query": "SELECT region, SUM(revenue) FROM sales GROUP BY region"},
                _SQL_ERROR.format(query="SELECT region, SUM(revenue) FROM sales GROUP BY region"),
            ),
            ("llm", "gpt-4o"),
            (
                "fail",
                "run_sql",
                {"query": "SELECT region, SUM(amount) FROM sales"},
                'psycopg.errors.GroupingError: column "sales.region" must appear in the GROUP BY'
                " clause or be used in an aggregate function",
            ),
            ("llm", "gpt-4o"),
            ("recall", "schema/sales"),
            (
                "tool",
                "run_sql",
                {"query": "SELECT region, SUM(amount) FROM sales GROUP BY region"},
                [["EMEA", 1204331.5], ["AMER", 2203118.0], ["APAC", 980211.25]],
            ),
            ("llm", "gpt-4o"),
            ("remember", "report/revenue_by_region", {"EMEA": 1204331.5, "AMER": 2203118.0}),
        ],
    },
    {
        "name": "docs-qa-rephrased-same-answer",
        "story": "An assistant asks the documentation QA endpoint the same question five"
        " ways; the endpoint echoes the question, stamps the answer, and says the same.",
        "agents": ["assistant"],
        "expect": {"retry"},
        "twin": "docs-qa-new-questions",
        "steps": [
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "ask_docs",
                {"question": "How do I rotate the API key?"},
                {
                    "question": "How do I rotate the API key?",
                    "answer": _ROTATE_ANSWER,
                    "generated_at": "2025-06-15T15:06:41Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "ask_docs",
                {"question": "how can I rotate my API key"},
                {
                    "question": "how can I rotate my API key",
                    "answer": _ROTATE_ANSWER,
                    "generated_at": "2025-06-15T15:06:47Z",
                },
            ),
            ("wait", 10),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "ask_docs",
                {"question": "How to rotate the API key?"},
                {
                    "question": "How to rotate the API key?",
                    "answer": _ROTATE_ANSWER,
                    "generated_at": "2025-06-15T15:07:02Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
            ("recall", "conversation"),
            (
                "tool*",
                "ask_docs",
                {"question": "What are the steps to rotate the API key?"},
                {
                    "question": "What are the steps to rotate the API key?",
                    "answer": _ROTATE_ANSWER,
                    "generated_at": "2025-06-15T15:07:09Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool*",
                "ask_docs",
                {"question": "How do I rotate API keys?"},
                {
                    "question": "How do I rotate API keys?",
                    "answer": _ROTATE_ANSWER,
                    "generated_at": "2025-06-15T15:07:15Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
        ],
    },
    {
        "name": "docs-qa-new-questions",
        "story": "The assistant asks the QA endpoint about keys five times, each time a new"
        " question with a new answer (the endpoint still echoes each question).",
        "agents": ["assistant"],
        "expect": set(),
        "twin": "docs-qa-rephrased-same-answer",
        "steps": [
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "ask_docs",
                {"question": "How do I rotate the API key?"},
                {
                    "question": "How do I rotate the API key?",
                    "answer": _ROTATE_ANSWER,
                    "generated_at": "2025-06-15T15:06:41Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "ask_docs",
                {"question": "How do I revoke a leaked API key?"},
                {
                    "question": "How do I revoke a leaked API key?",
                    "answer": "Choose Revoke next to the key; requests with it fail at once.",
                    "generated_at": "2025-06-15T15:06:47Z",
                },
            ),
            ("wait", 10),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "ask_docs",
                {"question": "Which scopes can an API key have?"},
                {
                    "question": "Which scopes can an API key have?",
                    "answer": "read, write and admin; a key has one or more of them.",
                    "generated_at": "2025-06-15T15:07:02Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
            ("recall", "conversation"),
            (
                "tool",
                "ask_docs",
                {"question": "Do API keys expire on their own?"},
                {
                    "question": "Do API keys expire on their own?",
                    "answer": "Only when an expiry date is set at creation.",
                    "generated_at": "2025-06-15T15:07:09Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "ask_docs",
                {"question": "How many API keys can a project have?"},
                {
                    "question": "How many API keys can a project have?",
                    "answer": "Up to 50 active keys per project.",
                    "generated_at": "2025-06-15T15:07:15Z",
                },
            ),
            ("llm", "gpt-4o-mini"),
        ],
    },
    {
        "name": "paginated-search-with-echo",
        "story": "A crawler pages through search results; every page echoes the query and"
        " the page number and brings new hits (pagination).",
        "agents": ["crawler"],
        "expect": set(),
        "twin": "react-search-reworded-echoing-api",
        "steps": [
            step
            for page in range(1, 7)
            for step in (
                (
                    "tool",
                    "search_issues",
                    {"query": "label:bug state:open loop", "page": page},
                    {
                        "query": "label:bug state:open loop",
                        "page": page,
                        "took_ms": 80 + page,
                        "items": [{"number": 4100 + 10 * page + i} for i in range(5)],
                    },
                ),
                ("remember", "crawl/cursor", {"page": page}),
                ("llm", "gpt-4o-mini"),
            )
        ],
    },
    {
        "name": "batch-over-ids-with-an-echoed-instruction",
        "story": "A cleanup job runs the same instruction over one record after another; each"
        " result echoes the instruction and names its record (batches over ids).",
        "agents": ["cleaner"],
        "expect": set(),
        "twin": "rag-retrieval-rephrased",
        "steps": [
            step
            for record in range(7301, 7308)
            for step in (
                (
                    "tool",
                    "clean_record",
                    {"id": record, "instruction": "normalise the address fields"},
                    {
                        "id": record,
                        "instruction": "normalise the address fields",
                        "changed": ["street", "postcode"],
                        "took_ms": 12,
                    },
                ),
                ("llm", "gpt-4o-mini"),
            )
        ],
    },
    {
        "name": "crawler-404-pages-echo-the-url",
        "story": "A link checker fetches one dead link after another; every 404 page echoes"
        " its URL, so the pages differ only in the URL they were asked for (crawlers).",
        "agents": ["linkcheck"],
        "expect": set(),
        "twin": "react-search-reworded-echoing-api",
        "steps": [
            step
            for path in (
                "/docs/old-install",
                "/docs/v1/api",
                "/blog/2019/launch",
                "/team",
                "/docs/old-cli",
                "/pricing/legacy",
            )
            for step in (
                (
                    "tool",
                    "fetch",
                    {"url": f"https://octopoda.dev{path}"},
                    {
                        "url": f"https://octopoda.dev{path}",
                        "status": 404,
                        "body": f"Not found: the page {path} does not exist.",
                    },
                ),
                ("remember", f"links{path}", "dead"),
            )
        ],
    },
]
