"""The dashboard in Debian's Chromium (issue 21's acceptance): every page opens on a store
filled by real agent runs, with a screenshot and an axe-core check each; memory search, a
version diff, a run's waterfall with the loop's calls marked, conflict resolution, resume,
audit verify and live events, each through the page and checked in the store. No request
may leave 127.0.0.1 (the ``page`` fixture fails the test otherwise)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from octopoda import SqliteStore

SERIOUS = ("serious", "critical")


def pages(fleet: Any) -> dict[str, str]:
    """Screenshot name -> path of every page."""
    agent = quote(fleet.support)
    return {
        "fleet": "/",
        "agent": f"/agents/{agent}",
        "memory-history": f"/agents/{agent}/memory/user_profile",
        "runs": f"/agents/{agent}/runs",
        "run-waterfall": f"/agents/{agent}/runs/{quote(fleet.loop_run)}",
        "spaces": "/spaces",
        "space": f"/spaces/{quote(fleet.space)}",
        "messages": f"/agents/{quote(fleet.coder)}/messages",
        "goals": f"/agents/{agent}/goals",
        "decisions": f"/agents/{agent}/decisions",
        "as-of": f"/agents/{agent}/as-of?seq={fleet.loop_seqs[0]}",
        "events": f"/agents/{agent}/events",
    }


PAGE_NAMES = [
    "fleet",
    "agent",
    "memory-history",
    "runs",
    "run-waterfall",
    "spaces",
    "space",
    "messages",
    "goals",
    "decisions",
    "as-of",
    "events",
]


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page (every rule axe runs by
    default: WCAG 2.x A/AA and best practices, labels and keyboard access among them)."""
    from axe_playwright_python.base import AXE_SCRIPT

    page.evaluate(AXE_SCRIPT)
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v.get("impact") in SERIOUS]


def describe(violations: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(str(n["target"]) for n in v["nodes"][:5])
        for v in violations
    )


def watch_errors(page: Any) -> list[str]:
    """Console errors and uncaught exceptions of the page, as they happen."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def open_page(page: Any, path: str) -> None:
    response = page.goto(path)
    assert response is not None, path
    assert response.status == 200, f"GET {path}: {response.status} {response.text()[:500]}"
    page.wait_for_load_state("networkidle")


def submit(page: Any, act: Any) -> None:
    """Do ``act`` (a click or a key that submits a form) and wait for the page the POST's
    303 leads back to."""
    with page.expect_navigation() as navigation:
        act()
    response = navigation.value
    assert response is not None and response.status == 200, response
    assert response.request.redirected_from is not None, "the POST did not redirect"
    assert response.request.redirected_from.method == "POST"
    page.wait_for_load_state("networkidle")


def runtime(fleet: Any, agent: str) -> Any:
    return fleet.runtime(agent)


# ==================================================================== every page


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_every_page_opens_with_a_screenshot_and_no_serious_accessibility_violation(
    page: Any, fleet: Any, shots: Any, name: str
) -> None:
    errors = watch_errors(page)
    path = pages(fleet)[name]
    open_page(page, path)
    assert page.title(), f"{path} has no <title>"
    assert page.locator("h1").count() >= 1, f"{path} has no <h1>"
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    violations = axe_violations(page)
    assert violations == [], f"{path}:\n{describe(violations)}"
    assert errors == [], f"{path}: {errors}"


@pytest.mark.parametrize("name", ["fleet", "agent", "space"])
def test_the_keyboard_reaches_the_page_s_controls(page: Any, fleet: Any, name: str) -> None:
    open_page(page, pages(fleet)[name])
    reached = set()
    for _ in range(40):
        page.keyboard.press("Tab")
        tag = page.evaluate("() => document.activeElement && document.activeElement.tagName")
        reached.add(tag)
    assert reached & {"A", "BUTTON", "INPUT", "SELECT", "SUMMARY"}, reached


def test_the_fleet_lists_every_agent_and_the_paused_one_says_why(page: Any, fleet: Any) -> None:
    open_page(page, "/")
    body = page.locator("body")
    for agent in (fleet.support, fleet.researcher, fleet.coder):
        assert page.get_by_role("link", name=agent, exact=True).count() >= 1, agent
    row = page.locator("tr", has=page.get_by_role("link", name=fleet.support, exact=True))
    assert re.search("paused", row.first.inner_text(), re.I)
    assert re.search("retry", body.inner_text(), re.I)


def test_an_agent_link_opens_its_page(page: Any, fleet: Any) -> None:
    open_page(page, "/")
    page.get_by_role("link", name=fleet.researcher, exact=True).first.click()
    page.wait_for_url(re.compile(rf"/agents/{fleet.researcher}$"))
    assert fleet.researcher in page.locator("h1").first.inner_text()


# ==================================================================== memory


def test_memory_search_by_words_finds_the_key(page: Any, fleet: Any) -> None:
    open_page(page, pages(fleet)["agent"])
    items = page.locator("#memory-results tr.memory-item")
    assert items.count() == len(fleet.memory_keys)
    page.get_by_label("Search by").select_option("words")
    page.get_by_label("Query").fill("vegetarian")
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_function(
        "n => document.querySelectorAll('#memory-results tr.memory-item').length < n",
        arg=len(fleet.memory_keys),
    )
    assert [items.nth(i).get_attribute("data-key") for i in range(items.count())] == [
        "user_profile"
    ]
    # and by key prefix
    page.get_by_label("Search by").select_option("prefix")
    page.get_by_label("Query").fill("pref")
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_selector("#memory-results tr.memory-item[data-key='preferred_language']")
    assert items.count() == 1


def test_a_key_s_history_shows_every_version_and_a_diff(page: Any, fleet: Any) -> None:
    open_page(page, pages(fleet)["agent"])
    page.get_by_role("link", name="user_profile", exact=True).first.click()
    page.wait_for_url(re.compile(r"/memory/user_profile"))
    text = page.locator("main").inner_text()
    for version in (1, 2, 3):
        assert re.search(rf"\bv?{version}\b", text), f"version {version} missing"
    # the diff of version 3 against 2: the new key and the changed city
    assert page.locator("article.version").count() == fleet.memory_keys["user_profile"]
    added = page.locator("#version-3 .diff .add").all_inner_texts()
    removed = page.locator("#version-3 .diff .del").all_inner_texts()
    assert any("vegetarian" in t for t in added), added
    assert any("Porto" in t for t in removed), removed
    assert fleet.support in text  # the author


# ==================================================================== runs and loops


def test_the_runs_page_lists_both_runs_and_opens_a_waterfall(page: Any, fleet: Any) -> None:
    open_page(page, pages(fleet)["runs"])
    for run in (fleet.good_run, fleet.loop_run):
        assert page.get_by_role("link", name=run).count() >= 1, run
    page.get_by_role("link", name=fleet.loop_run).first.click()
    page.wait_for_url(re.compile(rf"/runs/{fleet.loop_run}$"))
    assert page.locator(".loop-call").count() > 0


def test_the_waterfall_marks_exactly_the_loop_s_calls(page: Any, fleet: Any) -> None:
    open_page(page, pages(fleet)["run-waterfall"])
    marked = page.locator(".loop-call")
    assert marked.count() == len(fleet.loop_seqs)
    seqs = [int(marked.nth(i).get_attribute("data-seq")) for i in range(marked.count())]
    assert tuple(seqs) == fleet.loop_seqs
    text = " ".join(marked.all_inner_texts())
    assert text.count("get_weather") >= len(fleet.loop_seqs)
    body = page.locator("body").inner_text()
    assert re.search("retry", body, re.I), "no loop verdict on the waterfall"
    # the good run has none
    open_page(page, f"/agents/{fleet.support}/runs/{fleet.good_run}")
    assert page.locator(".loop-call").count() == 0
    assert "lookup_order" in page.locator("body").inner_text()


# ==================================================================== actions (POST)


def _conflict(fleet: Any, key: str) -> Any:
    agent = runtime(fleet, fleet.coder)
    try:
        found = [
            c
            for c in agent.shared_conflicts(space=fleet.space, include_resolved=True)
            if c.key == key
        ]
        assert len(found) == 1, found
        return found[0]
    finally:
        agent.close()


@pytest.mark.parametrize(("button", "keep"), [("keep theirs", "theirs"), ("keep mine", "mine")])
def test_resolving_a_conflict_in_the_page_resolves_it_in_the_store(
    page: Any, fleet: Any, button: str, keep: str
) -> None:
    key = fleet.conflict_key if keep == "theirs" else fleet.conflict_key_mine
    assert _conflict(fleet, key).status == "open"
    open_page(page, pages(fleet)["space"])
    conflict = page.locator(f"#conflict-{fleet.conflicts[key]}")
    assert key in conflict.locator("header").inner_text()
    submit(page, conflict.get_by_role("button", name=re.compile(button, re.I)).click)
    expect_text(page.locator(f"#conflict-{fleet.conflicts[key]} header"), f"kept {keep}")
    done = _conflict(fleet, key)
    assert done.status == "resolved", done
    assert done.resolution == keep, done
    reader = runtime(fleet, fleet.researcher)
    try:
        value = reader.read_shared(key, space=fleet.space)
        expected = "coder" if keep == "mine" else "researcher"
        assert f"by {expected}" in str(getattr(value, "value", value))
    finally:
        reader.close()


def expect_text(locator: Any, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text)


def _hex(value: Any) -> str:
    return value.hex() if isinstance(value, bytes) else str(value)


def _status(fleet: Any) -> str:
    store = SqliteStore(str(fleet.path))
    try:
        row = store.agent(fleet.support)
        assert row is not None
        return row.status
    finally:
        store.close()


def test_resume_in_the_page_resumes_the_agent_in_the_store(page: Any, fleet: Any) -> None:
    agent = runtime(fleet, fleet.support)
    try:
        if not agent.paused:
            agent.pause("paused again by the test")
    finally:
        agent.close()
    assert _status(fleet) == "paused"
    open_page(page, pages(fleet)["agent"])
    submit(page, page.locator("#resume-button").click)
    assert _status(fleet) == "active"
    open_page(page, pages(fleet)["agent"])
    assert page.locator("#resume-button").count() == 0
    assert page.locator("#agent-status").inner_text() == "active"


def test_resume_works_from_the_keyboard(page: Any, fleet: Any) -> None:
    agent = runtime(fleet, fleet.support)
    try:
        agent.pause("paused for the keyboard test")
    finally:
        agent.close()
    open_page(page, pages(fleet)["agent"])
    for _ in range(80):
        page.keyboard.press("Tab")
        name = page.evaluate("() => (document.activeElement.innerText || '').trim()")
        if re.search("resume", name, re.I):
            break
    else:
        pytest.fail("Tab never reached the resume button")
    submit(page, lambda: page.keyboard.press("Enter"))
    assert _status(fleet) == "active"


def test_verify_in_the_page_shows_ok_and_the_head(page: Any, fleet: Any) -> None:
    agent = runtime(fleet, fleet.support)
    try:
        head = agent.audit.head()
    finally:
        agent.close()
    open_page(page, pages(fleet)["agent"])
    result = page.locator("#verify-result")
    assert "Verified" not in result.inner_text()
    submit(page, page.locator("#verify-button").click)
    page.wait_for_selector("#verify-result .chain-ok")
    text = result.inner_text()
    assert f"Verified: {head.seq} events" in text, text
    assert f"head seq {head.seq}" in text, text
    assert page.locator("#chain-head-hash").inner_text() == _hex(head.hash)


# ==================================================================== live


@pytest.mark.parametrize("where", ["agent", "fleet"])
def test_a_new_event_appears_live_without_a_reload(page: Any, fleet: Any, where: str) -> None:
    open_page(page, pages(fleet)[where])
    live = page.locator("#live-events")
    assert live.count() == 1, "no #live-events element"
    page.evaluate("() => { window.__notReloaded = true; }")
    tool = f"live_probe_{where}"
    assert tool not in live.inner_text()
    agent = runtime(fleet, fleet.researcher if where == "fleet" else fleet.support)
    try:
        agent.record_tool_call(tool, {"n": 1}, result="ok", run_id="live-run")
    finally:
        agent.close()
    page.wait_for_function(
        "(tool) => document.getElementById('live-events').innerText.includes(tool)",
        arg=tool,
        timeout=15_000,
    )
    assert page.evaluate("() => window.__notReloaded === true"), "the page reloaded"


def test_a_post_without_the_csrf_token_is_refused(page: Any, fleet: Any) -> None:
    agent = runtime(fleet, fleet.support)
    try:
        agent.pause("paused for the CSRF test")
        open_page(page, pages(fleet)["agent"])  # (the page's cookies, but not its form)
        response = page.request.post(f"/agents/{fleet.support}/resume", form={"run_id": ""})
        assert response.status == 403
        assert _status(fleet) == "paused"
        submit(page, page.locator("#resume-button").click)  # the form's own token works
        assert _status(fleet) == "active"
    finally:
        agent.close()
