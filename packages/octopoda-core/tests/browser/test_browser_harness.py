"""The harness itself: the filled store, the server on loopback, chromium, the offsite guard."""

from __future__ import annotations

from typing import Any


def test_the_fleet_is_written_by_real_runs(fleet: Any) -> None:
    support = fleet.runtime(fleet.support)
    try:
        assert support.paused
        (signal,) = support.loop_status().signals
        assert signal.kind == "retry"
        assert tuple(e.seq for e in signal.events) == fleet.loop_seqs
        assert {r.id for r in support.runs()} == {"thread-1", "thread-2"}
        assert len(support.recall_history("user_profile")) == 3
        assert support.decisions()
        assert support.audit.verify().ok
    finally:
        support.close()


def test_chromium_loads_the_server_over_loopback(page: Any, server: Any) -> None:
    response = page.goto("/v1/health")
    assert response is not None and response.ok
    assert '"ok":true' in page.content().replace(" ", "")
    assert server.url.startswith("http://127.0.0.1:")


def test_a_request_to_another_host_is_aborted_and_recorded(
    browser: Any, server: Any, offsite: list[str], page: Any
) -> None:
    page.goto("/v1/health")
    # a page that tries to reach out: the route aborts it before it leaves the machine
    page.evaluate("() => fetch('http://203.0.113.7/beacon').catch(() => null)")
    assert offsite == ["http://203.0.113.7/beacon"]
    offsite.clear()  # (the page fixture would fail this test otherwise)
