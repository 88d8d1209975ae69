"""Class 2: volatile fields inside results, errors and memory values.

A test runner's timing, a ``duration_ms``, an ``updated_at`` or ``timestamp`` inside a dict,
a request id inside an error message: each made an unchanged result or value look new.
The twins change for real (fewer failures, a deployment that goes live, readings that
move), or only stamp the time as a heartbeat does.
"""

_T0 = 1_750_000_000.0  # the trace clock's start (FrozenClock)


def _iso(offset):
    seconds = int(offset)
    return f"2025-06-15T15:{6 + (40 + seconds) // 60:02d}:{(40 + seconds) % 60:02d}Z"


def _pytest(failed, passed, seconds, failures=("tests/test_auth.py::test_refresh_token",)):
    lines = [f"FAILED {f} - AssertionError: assert 401 == 200" for f in failures[:failed]]
    tally = f"{failed} failed, {passed} passed" if failed else f"{passed} passed"
    return "\n".join([*lines, f"{tally} in {seconds}s"])


_AUTH_FAILURES = (
    "tests/test_auth.py::test_refresh_token",
    "tests/test_auth.py::test_expired_session",
    "tests/test_auth.py::test_logout_everywhere",
)

TRACES = [
    {
        "name": "pytest-rerun-same-failure-new-timing",
        "story": "A coding agent reruns the test suite without changing anything; the same"
        " test fails each time, only pytest's 'in 3.42s' changes.",
        "agents": ["coder"],
        "expect": {"retry"},
        "twin": "pytest-fix-loop-failures-change",
        "steps": [
            ("llm", "claude-sonnet-4"),
            ("tool*", "bash", {"command": "pytest -q tests/test_auth.py"}, _pytest(1, 57, 3.42)),
            ("llm", "claude-sonnet-4"),
            ("recall", "plan"),
            ("tool*", "bash", {"command": "pytest -q tests/test_auth.py"}, _pytest(1, 57, 3.38)),
            ("llm", "claude-sonnet-4"),
            ("tool*", "bash", {"command": "pytest -q tests/test_auth.py"}, _pytest(1, 57, 3.51)),
            ("wait", 5),
            ("llm", "claude-sonnet-4"),
            ("tool*", "bash", {"command": "pytest -q tests/test_auth.py"}, _pytest(1, 57, 3.4)),
            ("llm", "claude-sonnet-4"),
            ("tool*", "bash", {"command": "pytest -q tests/test_auth.py"}, _pytest(1, 57, 3.47)),
            ("llm", "claude-sonnet-4"),
        ],
    },
    {
        "name": "pytest-fix-loop-failures-change",
        "story": "The agent edits the code between runs; the failures change and shrink"
        " until the suite passes (a test-fix loop whose failure changes).",
        "agents": ["coder"],
        "expect": set(),
        "twin": "pytest-rerun-same-failure-new-timing",
        "steps": [
            ("llm", "claude-sonnet-4"),
            (
                "tool",
                "bash",
                {"command": "pytest -q tests/test_auth.py"},
                _pytest(3, 55, 3.42, _AUTH_FAILURES),
            ),
            ("llm", "claude-sonnet-4"),
            ("tool", "edit_file", {"path": "src/auth.py", "patch": "@@ -41 +41 @@ refresh"}, "ok"),
            (
                "tool",
                "bash",
                {"command": "pytest -q tests/test_auth.py"},
                _pytest(2, 56, 3.38, _AUTH_FAILURES[1:]),
            ),
            ("llm", "claude-sonnet-4"),
            ("tool", "edit_file", {"path": "src/auth.py", "patch": "@@ -77 +77 @@ expiry"}, "ok"),
            (
                "tool",
                "bash",
                {"command": "pytest -q tests/test_auth.py"},
                _pytest(1, 57, 3.51, _AUTH_FAILURES[2:]),
            ),
            ("wait", 5),
            ("llm", "claude-sonnet-4"),
            ("tool", "edit_file", {"path": "src/session.py", "patch": "@@ -12 +12 @@"}, "ok"),
            ("tool", "bash", {"command": "pytest -q tests/test_auth.py"}, _pytest(0, 58, 3.4)),
            ("llm", "claude-sonnet-4"),
        ],
    },
    {
        "name": "http-409-request-id-in-error",
        "story": "A billing agent retries creating an invoice; the API answers 409 with a"
        " fresh request id (letters only) in every error message.",
        "agents": ["billing"],
        "expect": {"retry"},
        "twin": "http-errors-until-the-call-is-fixed",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "fail*",
                "create_invoice",
                {"customer": "cus_QaZ", "period": "2025-06"},
                "HTTPError: 409 Conflict: an invoice already exists for this period"
                " (request id: req_QxZmWpLkTrBn)",
            ),
            ("llm", "gpt-4o"),
            ("recall", "customer/cus_QaZ"),
            (
                "fail*",
                "create_invoice",
                {"customer": "cus_QaZ", "period": "2025-06"},
                "HTTPError: 409 Conflict: an invoice already exists for this period"
                " (request id: req_HbVcNeRtYuIo)",
            ),
            ("wait", 3),
            ("llm", "gpt-4o"),
            (
                "fail*",
                "create_invoice",
                {"customer": "cus_QaZ", "period": "2025-06"},
                "HTTPError: 409 Conflict: an invoice already exists for this period"
                " (request id: req_PlOkMjNhUgYt)",
            ),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "http-errors-until-the-call-is-fixed",
        "story": "The same API, errors with request ids, but each error is a different one"
        " and the agent fixes its call until it succeeds.",
        "agents": ["billing"],
        "expect": set(),
        "twin": "http-409-request-id-in-error",
        "steps": [
            ("llm", "gpt-4o"),
            (
                "fail",
                "create_invoice",
                {"customer": "cus_QaZ", "period": "2025-06"},
                "HTTPError: 409 Conflict: an invoice already exists for this period"
                " (request id: req_QxZmWpLkTrBn)",
            ),
            ("llm", "gpt-4o"),
            (
                "tool",
                "list_invoices",
                {"customer": "cus_QaZ"},
                [{"id": "in_7781", "period": "2025-06", "status": "draft"}],
            ),
            (
                "fail",
                "finalize_invoice",
                {"id": "in_7781"},
                "HTTPError: 422 Unprocessable: the invoice has no line items"
                " (request id: req_HbVcNeRtYuIo)",
            ),
            ("llm", "gpt-4o"),
            ("tool", "add_line_item", {"invoice": "in_7781", "amount": 4900}, {"items": 1}),
            ("tool", "finalize_invoice", {"id": "in_7781"}, {"id": "in_7781", "status": "open"}),
            ("llm", "gpt-4o"),
        ],
    },
    {
        "name": "deploy-retry-with-stamped-state",
        "story": "A release agent retries a failing deploy and, each time, records its state"
        " in memory with an updated_at stamp: the stamp made every write look like news and"
        " hid the retry loop.",
        "agents": ["release"],
        "expect": {"retry"},
        "twin": "deploy-state-that-moves-on",
        "steps": [
            step
            for attempt in range(4)
            for step in (
                ("llm", "gpt-4o"),
                (
                    "fail*",
                    "deploy",
                    {"service": "billing", "version": "2.14.0"},
                    "DeployError: health check timed out after 120s on billing-7c9f",
                ),
                (
                    "remember",
                    "deploy_state",
                    {
                        "service": "billing",
                        "version": "2.14.0",
                        "state": "retrying",
                        "updated_at": _iso(attempt * 9 + 5),
                    },
                ),
                ("wait", 2),
            )
        ],
    },
    {
        "name": "deploy-state-that-moves-on",
        "story": "The same deploy and state writes, but the deploy gets past each stage and"
        " the state changes with it.",
        "agents": ["release"],
        "expect": set(),
        "twin": "deploy-retry-with-stamped-state",
        "steps": [
            step
            for attempt, (result, state) in enumerate(
                [
                    ({"stage": "build", "ok": True, "image": "billing:2.14.0"}, "built"),
                    ({"stage": "canary", "ok": True, "pods": 1}, "canary"),
                    ({"stage": "rollout", "ok": True, "pods": 6}, "rolling out"),
                    ({"stage": "verify", "ok": True, "p95_ms": 212}, "live"),
                ]
            )
            for step in (
                ("llm", "gpt-4o"),
                ("tool", "deploy", {"service": "billing", "version": "2.14.0"}, result),
                (
                    "remember",
                    "deploy_state",
                    {
                        "service": "billing",
                        "version": "2.14.0",
                        "state": state,
                        "updated_at": _iso(attempt * 9 + 5),
                    },
                ),
                ("wait", 2),
            )
        ],
    },
    {
        "name": "deployment-status-duration-ms",
        "story": "An agent keeps asking for a deployment's status between model calls; the"
        " answer is still pending, with a growing duration_ms and a fresh checked_at.",
        "agents": ["release"],
        "expect": {"retry"},
        "twin": "deployment-status-progresses",
        "steps": [
            step
            for n in range(5)
            for step in (
                ("llm", "gpt-4o-mini"),
                (
                    "tool*",
                    "get_deployment",
                    {"id": "dep_7f3a"},
                    {
                        "id": "dep_7f3a",
                        "status": "pending",
                        "duration_ms": 10432 + 6011 * n,
                        "checked_at": _iso(n * 6),
                    },
                ),
                ("recall", "release_notes"),
            )
        ],
    },
    {
        "name": "deployment-status-progresses",
        "story": "The same status checks while the deployment moves from pending to live"
        " (a progressing poll).",
        "agents": ["release"],
        "expect": set(),
        "twin": "deployment-status-duration-ms",
        "steps": [
            step
            for n, status in enumerate(["pending", "building", "building", "deploying", "live"])
            for step in (
                ("llm", "gpt-4o-mini"),
                (
                    "tool",
                    "get_deployment",
                    {"id": "dep_7f3a"},
                    {
                        "id": "dep_7f3a",
                        "status": status,
                        "progress": 20 * n + 10,
                        "duration_ms": 10432 + 6011 * n,
                        "checked_at": _iso(n * 6),
                    },
                ),
                ("recall", "release_notes"),
            )
        ],
    },
    {
        "name": "proxy-502-request-id-in-result",
        "story": "A scraper gets the same 502 page back from a proxy five times; the body"
        " carries a request id (letters and dashes) that differs every time.",
        "agents": ["scraper"],
        "expect": {"retry"},
        "twin": "proxy-recovers",
        "steps": [
            step
            for rid in (
                "Kf-QmZwXyPlRt",
                "Hb-TrEwQaSdFg",
                "Lp-OiUyTrEwQa",
                "Zx-CvBnMaSdFg",
                "Qw-ErTyUiOpAs",
            )
            for step in (
                ("llm", "gpt-4o-mini"),
                (
                    "tool*",
                    "http_get",
                    {"url": "https://shop.example.com/api/stock?sku=A-1"},
                    f"502 Bad Gateway: upstream unavailable. Request ID: {rid}",
                ),
                ("wait", 2),
            )
        ],
    },
    {
        "name": "proxy-recovers",
        "story": "The same endpoint fails twice with a 502 and then answers with the stock"
        " levels, which change as orders come in.",
        "agents": ["scraper"],
        "expect": set(),
        "twin": "proxy-502-request-id-in-result",
        "steps": [
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "http_get",
                {"url": "https://shop.example.com/api/stock?sku=A-1"},
                "502 Bad Gateway: upstream unavailable. Request ID: Kf-QmZwXyPlRt",
            ),
            ("wait", 2),
            ("llm", "gpt-4o-mini"),
            (
                "tool",
                "http_get",
                {"url": "https://shop.example.com/api/stock?sku=A-1"},
                "502 Bad Gateway: upstream unavailable. Request ID: Hb-TrEwQaSdFg",
            ),
            ("wait", 2),
            *[
                step
                for stock in (41, 39, 36)
                for step in (
                    ("llm", "gpt-4o-mini"),
                    (
                        "tool",
                        "http_get",
                        {"url": "https://shop.example.com/api/stock?sku=A-1"},
                        {"sku": "A-1", "stock": stock, "request_id": f"req-{stock}"},
                    ),
                    ("wait", 2),
                )
            ],
        ],
    },
    {
        "name": "worker-heartbeat-dict",
        "story": "An idle worker stamps a heartbeat in memory every minute (a dict with the"
        " current time) and checks its empty queue: heartbeats, not a loop.",
        "agents": ["worker"],
        "expect": set(),
        "twin": "deploy-retry-with-stamped-state",
        "steps": [
            step
            for minute in range(8)
            for step in (
                ("recall", "heartbeat"),
                (
                    "remember",
                    "heartbeat",
                    {"worker": "w-3", "alive": True, "ts": _T0 + minute * 62 + 0.25},
                ),
                ("tool", "check_queue", {"queue": "resize"}, []),
                ("tool", "sleep", {"seconds": 60}, None),
                ("wait", 60),
            )
        ],
    },
    {
        "name": "metrics-readings-with-timestamps",
        "story": "A monitoring agent reads CPU and latency metrics; each reading carries a"
        " timestamp and the values move (a record's own latency_ms is data).",
        "agents": ["monitor"],
        "expect": set(),
        "twin": "deployment-status-duration-ms",
        "steps": [
            step
            for cpu, latency in ((41.5, 212), (57.0, 240), (63.25, 251), (48.0, 199), (44.5, 205))
            for step in (
                ("llm", "gpt-4o-mini"),
                (
                    "tool",
                    "get_metrics",
                    {"service": "api"},
                    {"cpu_percent": cpu, "latency_ms": latency, "timestamp": _iso(cpu)},
                ),
                (
                    "remember",
                    "last_metrics",
                    {"cpu": cpu, "latency_ms": latency, "updated_at": _iso(cpu)},
                ),
            )
        ],
    },
]
