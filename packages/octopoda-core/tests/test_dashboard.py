"""The dashboard at ``/``: every page over a store filled by real runtime calls, the memory
search, version diffs, the waterfall's loop marks, the CSRF-checked actions (resume,
verify, forget, resolve), pagination and speed, live rows, tokens off loopback, and that
nothing served points anywhere but this server."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")

from fastapi.testclient import TestClient

from octopoda import AgentRuntime, Octopoda
from octopoda._server.app import create_app
from octopoda._server.settings import ServerSettings, Token
from octopoda._store.config import open_store


def _load(name: str) -> Any:
    """A helper module beside this file (the tests are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"octopoda_test_{name}", Path(__file__).with_name(f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fill = _load("dashboard_data").fill
STATIC = Path(__file__).parents[1] / "src" / "octopoda" / "_dashboard" / "static"
TOKEN = "dashboard-token-0123456789"


@pytest.fixture
def db(tmp_path: Path) -> tuple[str, dict[str, Any]]:
    path = str(tmp_path / "dash.db")
    return path, fill(path)


def _client(path: str, settings: ServerSettings | None = None) -> Iterator[TestClient]:
    store = open_store(path)
    app = create_app(store, settings)
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            yield client
    finally:
        app.fastapi.state.octopoda.close()
        store.close()


@pytest.fixture
def client(db: tuple[str, dict[str, Any]]) -> Iterator[TestClient]:
    yield from _client(db[0])


def csrf_of(client: TestClient, page: str = "/agents/researcher") -> str:
    """The CSRF token of a page's forms (the cookie is kept by the client)."""
    html = client.get(page).text
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, f"no CSRF field on {page}"
    return found.group(1)


class Marks(HTMLParser):
    """The ``data-seq`` of every element with class ``loop-call``."""

    def __init__(self) -> None:
        super().__init__()
        self.loop_seqs: list[int] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if "loop-call" in (a.get("class") or "").split():
            self.loop_seqs.append(int(str(a["data-seq"])))


def parsed(html: str) -> Marks:
    marks = Marks()
    marks.feed(html)
    return marks


# ------------------------------------------------------------------------------ pages


def test_every_page_renders_its_content(client: TestClient, db: tuple[str, dict[str, Any]]) -> None:
    data = db[1]
    pages = {
        "/": ["researcher", "looper", "writer", "paused", "retry loop", "ops-chart", "team"],
        "/agents/researcher": [
            "user",
            "diet",
            "Recommend the vegetarian menu",
            "verify-form",
            "latency-chart",
            "&#34;duration_ms&#34;:[350.0,80.0]",
        ],
        "/agents/researcher/memory/user": ["Version 3", "Version 1", "Lyon"],
        "/agents/researcher/runs": ["thread-1"],
        "/agents/researcher/runs/thread-1": ["gpt-test", "120 in / 40 out", "$0.0125", "lookup"],
        "/agents/researcher/events": ["remember", "decision"],
        "/agents/researcher/decisions": ["the user eats no meat", "What the agent knew"],
        f"/agents/researcher/as-of?seq={data['decision_seq']}": ["diet", "vegetarian"],
        "/agents/researcher/messages": ["the venue is Chez Paul", "invite written", "handoff"],
        "/agents/researcher/goals": ["Plan the dinner", "venue found", "50%"],
        "/agents/looper": ["paused", "resume-form", "retry"],
        "/agents/looper/runs/job-7": ["fetch", "HTTP 503", "retry"],
        "/spaces": ["team", "global"],
        "/spaces/team": ["menu", "v3: stew", "v2: salad", "Keep mine", "Keep theirs"],
        "/agents/researcher/totals": ["Tool calls", "$0.0125"],
    }
    for url, expected in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["content-type"].startswith("text/html")
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        for text in expected:
            assert text in response.text, (url, text)
    knew = client.get(f"/agents/researcher/decisions/{data['decision_seq']}/knew")
    assert knew.status_code == 200 and 'data-key="diet"' not in knew.text
    assert "/agents/researcher/memory/diet" in knew.text and "vegetarian" in knew.text
    fragment = client.get(
        f"/agents/researcher/decisions/{data['decision_seq']}/knew", headers={"HX-Request": "1"}
    )
    assert fragment.text.startswith('<ul class="knew-keys">') and "<html" not in fragment.text
    assert client.get("/agents/researcher/decisions/999999/knew").status_code == 404
    assert client.get("/agents/nobody").status_code == 404
    assert client.get("/agents/researcher/memory/no-such-key").status_code == 404
    assert client.get("/agents/researcher/runs/no-such-run").status_code == 404


def test_the_pages_render_on_postgresql(postgres_clean_url: str) -> None:
    """The dashboard reads through the store protocol only: PostgreSQL serves it as well."""
    data = fill(postgres_clean_url)
    for c in _client(postgres_clean_url):
        for url in (
            "/",
            "/agents/researcher",
            "/agents/researcher/memory/user",
            "/agents/researcher/as-of?seq=3",
            "/agents/researcher/decisions",
            "/agents/researcher/messages",
            "/agents/researcher/goals",
            "/agents/researcher/totals",
            "/spaces/team",
        ):
            assert c.get(url).status_code == 200, url
        run = c.get(f"/agents/looper/runs/{data['loop_run']}").text
        assert parsed(run).loop_seqs == data["loop_seqs"]
        words = c.get("/agents/researcher", params={"mode": "words", "q": "vegetarian"}).text
        assert 'class="memory-item" data-key="diet"' in words
        token = csrf_of(c, "/spaces/team")
        resolved = c.post(
            f"/spaces/team/conflicts/{data['conflict_id']}/resolve",
            data={"csrf_token": token, "keep": "mine"},
        )
        assert "kept mine by researcher" in resolved.text


def test_the_fleet_shows_status_loops_spend_and_open_conflicts(client: TestClient) -> None:
    html = client.get("/").text
    looper = html[html.index('data-agent="looper"') :].split("</tr>")[0]
    assert "paused" in looper and "retry loop" in looper
    assert 'data-signal="retry">retry: 1' in looper
    researcher = html[html.index('data-agent="researcher"') :].split("</tr>")[0]
    assert "$0.0125" in researcher
    assert 'href="/spaces/team#conflicts">team</a>: 1 open' in html
    assert 'id="live-events" data-stream="/dashboard/stream"' in html
    assert 'id="ops-chart"' in html and 'id="spend-chart"' in html
    assert "&#34;spend&#34;:[" in html and "0.0125" in html  # the chart's data


def test_the_fleet_filters_and_sorts(client: TestClient) -> None:
    paused = client.get("/?status=paused").text
    assert 'data-agent="looper"' in paused and 'data-agent="researcher"' not in paused
    named = client.get("/?name=WRIT").text
    assert 'data-agent="writer"' in named and 'data-agent="looper"' not in named
    by_events = client.get("/?sort=events").text
    order = re.findall(r'data-agent="([^"]+)"', by_events)
    assert order[0] == "researcher"  # the most events
    assert re.findall(r'data-agent="([^"]+)"', client.get("/").text) == sorted(order)


# ------------------------------------------------------------------------------ memory


def test_memory_search_by_prefix_words_meaning_and_tags(client: TestClient) -> None:
    def keys(**params: str) -> list[str]:
        html = client.get("/agents/researcher", params=params).text
        results = html[html.index('id="memory-results"') :]
        return re.findall(r'class="memory-item" data-key="([^"]+)"', results)

    assert keys() == ["diet", "plan", "scratch", "user"]
    assert keys(mode="prefix", q="us") == ["user"]
    assert keys(mode="words", q="vegetarian") == ["diet"]
    assert keys(mode="words", q="Lyon") == ["user"]
    assert keys(mode="prefix", tags="food") == ["diet"]
    assert keys(mode="meaning", q="does the user eat meat")[0] == "diet"
    lexical = client.get("/agents/researcher", params={"mode": "meaning", "q": "meat"}).text
    assert 'class="note"' in lexical  # no embedder: said so
    # htmx asks for the results only
    fragment = client.get(
        "/agents/researcher",
        params={"mode": "words", "q": "vegetarian", "fragment": "1"},
        headers={"HX-Request": "true"},
    ).text
    assert fragment.startswith('<div id="memory-results">') and "<html" not in fragment


def test_a_keys_history_shows_diffs_authors_and_times(client: TestClient) -> None:
    html = client.get("/agents/researcher/memory/user").text
    versions = re.findall(r'class="version" id="version-(\d+)"', html)
    assert versions == ["3", "2", "1"]
    v3 = html[html.index('id="version-3"') : html.index('id="version-2"')]
    assert '<span class="del">-  &#34;city&#34;: &#34;Paris&#34;,</span>' in v3
    assert '<span class="add">+  &#34;city&#34;: &#34;Lyon&#34;,</span>' in v3
    v2 = html[html.index('id="version-2"') : html.index('id="version-1"')]
    assert "&#34;name&#34;: &#34;Alicia&#34;" in v2
    assert 'class="del">-  &#34;name&#34;: &#34;Alice' in v2
    assert 'class="author">researcher</span>' in html and "UTC</time>" in html


def test_memory_as_of_a_seq_a_time_and_a_decision(
    client: TestClient, db: tuple[str, dict[str, Any]]
) -> None:
    first = client.get("/agents/researcher/as-of?seq=1").text
    assert 'data-key="user"' in first and "Alice" in first and 'data-key="diet"' not in first
    later = client.get("/agents/researcher/as-of", params={"time": "2999-01-01T00:00:00Z"}).text
    assert "Memory as of seq" in later and 'data-key="diet"' in later
    early = client.get("/agents/researcher/as-of", params={"time": "2000-01-01T00:00:00Z"}).text
    assert "Memory as of seq 0" in early and "No memories then." in early
    seq = db[1]["decision_seq"]
    assert f'<option value="{seq}"' in first
    bad = client.get("/agents/researcher/as-of", params={"time": "yesterday"}).text
    assert "is not a time" in bad


# ------------------------------------------------------------------------------ runs


def test_the_waterfall_marks_exactly_the_loops_events(
    client: TestClient, db: tuple[str, dict[str, Any]]
) -> None:
    data = db[1]
    html = client.get(f"/agents/looper/runs/{data['loop_run']}").text
    marks = parsed(html)
    assert marks.loop_seqs == data["loop_seqs"]
    assert "live-events" in marks.ids and "waterfall" in marks.ids
    assert "retry" in html and "HTTP 503" in html and "15.0 ms" in html
    verdict = " ".join(map(str, data["loop_seqs"]))  # what live rows use to mark the loop
    assert f'data-kind="loop_detected" data-loop-seqs="{verdict}"' in html
    # the same marks wherever the events are listed
    events = parsed(client.get("/agents/looper/events").text)
    assert sorted(events.loop_seqs) == data["loop_seqs"]
    # a run without a loop marks nothing
    assert parsed(client.get("/agents/researcher/runs/thread-1").text).loop_seqs == []
    assert 'id="agent-paused"' in html  # the agent's own pause, from its run's page
    token = csrf_of(client, f"/agents/looper/runs/{data['loop_run']}")
    back = client.post(
        "/agents/looper/resume",
        data={"csrf_token": token, "next": f"/agents/looper/runs/{data['loop_run']}"},
        follow_redirects=False,
    )
    assert back.headers["location"] == f"/agents/looper/runs/{data['loop_run']}"
    evil = client.post(
        "/agents/looper/resume",
        data={"csrf_token": token, "next": "//evil.example/"},
        follow_redirects=False,
    )
    assert evil.headers["location"] == "/"  # only back to this server


def test_runs_list_shows_status_and_counts(client: TestClient) -> None:
    html = client.get("/agents/looper/runs").text
    assert 'data-run="job-7"' in html and "<td>4</td>" in html  # 3 calls + the verdict


# ------------------------------------------------------------------------------ actions


@pytest.mark.parametrize(
    "url, form",
    [
        ("/agents/looper/resume", {}),
        ("/agents/researcher/verify", {}),
        ("/agents/researcher/memory/scratch/forget", {}),
        ("/spaces/team/conflicts/1/resolve", {"keep": "theirs"}),
    ],
)
def test_actions_without_the_csrf_token_are_refused(
    client: TestClient, db: tuple[str, dict[str, Any]], url: str, form: dict[str, str]
) -> None:
    store = open_store(db[0])  # (the app's own store: one per file in a process)
    before = {a: store.agent(a) for a in ("looper", "researcher")}
    assert client.post(url, data=form).status_code == 403  # no cookie, no field
    token = csrf_of(client)
    assert client.post(url, data=form).status_code == 403  # the cookie alone
    assert client.post(url, data={**form, "csrf_token": token + "x"}).status_code == 403
    cross_site = {"origin": "http://evil.example"}  # the right token, from another site
    with_token = {**form, "csrf_token": token}
    assert client.post(url, data=with_token, headers=cross_site).status_code == 403
    other = TestClient(client.app, base_url="http://127.0.0.1")  # another browser's field
    assert other.post(url, data={**form, "csrf_token": token}).status_code == 403
    assert {a: store.agent(a) for a in before} == before  # nothing was written


def test_resume_with_csrf_unpauses_and_is_an_event(
    client: TestClient, db: tuple[str, dict[str, Any]]
) -> None:
    token = csrf_of(client, "/agents/looper")
    assert client.get("/agents/looper").headers["referrer-policy"] == "same-origin"
    response = client.post(
        "/agents/looper/resume",
        data={"csrf_token": token},
        headers={"origin": "null"},  # (an opaque origin: the token alone decides)
        follow_redirects=False,
    )
    assert response.status_code == 303 and response.headers["location"] == "/agents/looper"
    with Octopoda(db[0]) as check:
        looper = check.agent("looper")
        assert not looper.paused
        last = looper.timeline()[-1]
        assert last.kind == "resumed"
        assert looper.audit.verify().ok
    page = client.get("/agents/looper").text
    assert 'id="agent-status" class="status-active">active' in page
    assert "resume-form" not in page


def test_verify_shows_the_result_and_the_head(client: TestClient) -> None:
    token = csrf_of(client, "/agents/researcher")
    page = client.post("/agents/researcher/verify", data={"csrf_token": token}).text
    assert "Verified:" in page and 'id="chain-head-seq"' in page
    assert "chain-ok" in client.get("/").text  # the fleet shows it too


def test_forget_writes_a_tombstone_event(
    client: TestClient, db: tuple[str, dict[str, Any]]
) -> None:
    token = csrf_of(client, "/agents/researcher/memory/scratch")
    page = client.post("/agents/researcher/memory/scratch/forget", data={"csrf_token": token})
    assert page.status_code == 200 and "(forgotten)" in page.text
    with Octopoda(db[0]) as check:
        agent = check.agent("researcher")
        assert not agent.recall("scratch")
        assert agent.timeline()[-1].kind == "forget"


def test_resolving_a_conflict_keeps_theirs_and_is_audited(
    client: TestClient, db: tuple[str, dict[str, Any]]
) -> None:
    conflict = db[1]["conflict_id"]
    token = csrf_of(client, "/spaces/team")
    response = client.post(
        f"/spaces/team/conflicts/{conflict}/resolve",
        data={"csrf_token": token, "keep": "theirs"},
    )
    assert response.status_code == 200
    assert "kept theirs by researcher" in response.text
    assert "Keep mine" not in response.text  # nothing open any more
    with Octopoda(db[0]) as check:
        researcher = check.agent("researcher")
        assert researcher.read_shared("menu", "team").value == "v2: salad"
        assert researcher.timeline()[-1].kind == "conflict_resolved"
        assert researcher.audit.verify().ok
    assert "Spaces with open conflicts" in client.get("/").text
    assert "/spaces/team#conflicts" not in client.get("/").text
    again = client.post(
        f"/spaces/team/conflicts/{conflict}/resolve", data={"csrf_token": token, "keep": "mine"}
    )
    assert again.status_code == 409


# ------------------------------------------------------------------------------ scale


def test_the_fleet_paginates(tmp_path: Path) -> None:
    path = str(tmp_path / "many.db")
    with Octopoda(path) as client:
        for i in range(120):
            client.agent(f"agent-{i:03d}").remember("k", i)
    for c in _client(path):
        first = c.get("/").text
        assert len(re.findall(r'class="agent-row', first)) == 50
        assert "Page 1 of 3 (120)" in first and 'href="?page=2"' in first
        last = c.get("/?page=3").text
        assert len(re.findall(r'class="agent-row', last)) == 20
        assert 'data-agent="agent-119"' in last
        assert 'href="?name=agent-0&amp;page=2"' in c.get("/?name=agent-0").text


def test_a_thousand_agents_render_in_under_300_ms(tmp_path: Path) -> None:
    path = str(tmp_path / "fleet.db")
    store = open_store(path)
    for i in range(1000):
        agent = AgentRuntime(f"agent-{i:04d}", store=store)
        agent.remember("k", i)
        agent.record_llm_call("m", cost_usd=0.001, tokens_in=3, tokens_out=1)
    store.close()
    for c in _client(path):
        c.get("/")  # warm up (templates compile once)
        took = {}
        for url in ("/", "/?sort=last_active", "/?page=20", "/?status=active&name=agent-09"):
            runs = []
            for _ in range(3):  # the best of 3: a busy machine's pauses are not the page's
                start = time.perf_counter()
                assert c.get(url).status_code == 200
                runs.append(time.perf_counter() - start)
            took[url] = min(runs)
        assert max(took.values()) < 0.3, took


# ------------------------------------------------------------------------------ live


def test_new_events_stream_as_rows(client: TestClient, db: tuple[str, dict[str, Any]]) -> None:
    head = open_store(db[0]).agent("researcher")  # (the app's store: not closed here)
    assert head is not None
    with Octopoda(db[0]) as other:
        other.agent("researcher").remember("fresh", "a new event")
    with client.stream(
        "GET", f"/dashboard/stream?agent=researcher&after={head.head_seq}&max_seconds=0.2"
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    assert f"id: {head.head_seq + 1}\nevent: row\ndata: <tr" in body
    assert f'data-seq="{head.head_seq + 1}"' in body and "fresh v1" in body
    with client.stream("GET", "/dashboard/stream?max_seconds=0.2") as response:
        assert "event: row" not in "".join(response.iter_text())  # the fleet: only new ones
    limited = ServerSettings(tokens=[Token(TOKEN, agents=frozenset({"writer"}))])
    for c in _client(db[0], limited):
        c.get("/?token=" + TOKEN)
        assert c.get("/dashboard/stream?agent=researcher&max_seconds=0.2").status_code == 403


# ------------------------------------------------------------------------------ security


def test_no_external_urls_inline_scripts_or_styles(client: TestClient) -> None:
    allowed_hosts = ("127.0.0.1", "localhost")
    url = re.compile(r"https?://([^/\"'\s:)]+)")
    pages = [
        "/",
        "/agents/researcher",
        "/agents/researcher/memory/user",
        "/agents/looper/runs/job-7",
        "/spaces/team",
        "/agents/researcher/goals",
    ]
    for page in pages:
        html = client.get(page).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), page
        assert " style=" not in html, page
        for src in re.findall(r'(?:src|href)="([^"]+)"', html):
            assert src.startswith(("/", "?", "#", "data:")), (page, src)
        hosts = {h for h in url.findall(html) if h not in allowed_hosts}
        assert not hosts, (page, hosts)
    served = sorted(p for p in STATIC.rglob("*") if p.suffix in (".js", ".css"))
    assert {p.name for p in served} >= {"htmx.min.js", "uPlot.iife.min.js", "dashboard.js"}
    for file in served:
        response = client.get("/static/" + file.relative_to(STATIC).as_posix())
        assert response.status_code == 200
        text = re.sub(r"/\*!.*?\*/", "", response.text, flags=re.S)  # licence comments
        text = text.replace("http://www.w3.org/2000/svg", "")  # SVG namespace, never fetched
        hosts = {h for h in url.findall(text) if h not in allowed_hosts}
        assert not hosts, (file.name, hosts)


def test_tokens_off_loopback_and_the_browser_cookie(db: tuple[str, dict[str, Any]]) -> None:
    settings = ServerSettings(host="0.0.0.0", tokens=[Token(TOKEN)])
    for c in _client(db[0], settings):
        assert c.get("/").status_code == 401
        assert c.get("/?token=wrong-token-0123456789").status_code == 401
        login = c.get("/agents/researcher?token=" + TOKEN + "&mode=words", follow_redirects=False)
        assert login.status_code == 303
        assert login.headers["location"] == "/agents/researcher?mode=words"
        cookie = login.headers["set-cookie"]
        assert "octopoda_token=" in cookie and "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert c.get("/").status_code == 200  # the cookie now
        assert c.get("/static/dashboard.js").status_code == 200
        # the API still wants the bearer header: the cookie does not count there
        assert c.get("/v1/agents").status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert c.get("/v1/agents", headers=bearer).status_code == 200
    read_only = ServerSettings(host="0.0.0.0", tokens=[Token(TOKEN, scope="read")])
    for c in _client(db[0], read_only):
        c.get("/?token=" + TOKEN)
        token = csrf_of(c, "/agents/looper")
        assert c.post("/agents/looper/resume", data={"csrf_token": token}).status_code == 403
    limited = ServerSettings(
        host="0.0.0.0", tokens=[Token(TOKEN, agents=frozenset({"researcher"}))]
    )
    for c in _client(db[0], limited):
        c.get("/?token=" + TOKEN)
        fleet = c.get("/").text
        assert 'data-agent="researcher"' in fleet and 'data-agent="looper"' not in fleet
        assert c.get("/agents/looper").status_code == 404


def test_the_vendored_assets_are_package_data() -> None:
    """The assets are files of the package (uv_build puts every file of the package in the
    wheel: checked by building it), with the versions the README pins."""
    from importlib.resources import files

    vendor = files("octopoda._dashboard") / "static" / "vendor"
    for name in ("htmx.min.js", "uPlot.iife.min.js", "uPlot.min.css", "pico.classless.min.css"):
        assert len(vendor.joinpath(name).read_bytes()) > 1000
    for name in ("htmx.LICENSE", "uPlot.LICENSE", "pico.LICENSE.md"):
        assert vendor.joinpath(name).is_file()
    readme = vendor.joinpath("README.md").read_text(encoding="utf-8")
    assert "| 2.0.11 |" in readme and "| 1.6.32 |" in readme and "| 2.1.1 |" in readme


def test_octopoda_serve_opens_the_default_store_and_prints_the_dashboard_url(
    tmp_path: Path,
) -> None:
    import json
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    AgentRuntime("from-default-store", store=str(home / "octopoda.db")).remember("k", 1)
    env = {**os.environ, "OCTOPODA_HOME": str(home)}
    env.pop("OCTOPODA_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "octopoda", "serve", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline()
        url = json.loads(line)["url"]  # the --json line is unchanged: url and store
        assert set(json.loads(line)) == {"url", "store"}
        import requests

        session = requests.Session()
        session.trust_env = False
        page = session.get(url + "/", timeout=10)
        assert page.status_code == 200 and "from-default-store" in page.text
    finally:
        proc.terminate()
        proc.wait(10)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert f"octopoda serve: dashboard at {url}/" in err


class Controls(HTMLParser):
    """Form controls without a label, and the ids of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.labelled: set[str] = set()
        self.controls: list[dict[str, str | None]] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "label" and a.get("for"):
            self.labelled.add(str(a["for"]))
        if tag in ("input", "select", "textarea") and a.get("type") != "hidden":
            self.controls.append(a)

    def unlabelled(self) -> list[dict[str, str | None]]:
        return [
            c for c in self.controls if c.get("id") not in self.labelled and not c.get("aria-label")
        ]


def test_every_form_control_is_labelled_and_ids_are_unique(client: TestClient) -> None:
    pages = [
        "/",
        "/agents/researcher",
        "/agents/researcher/memory/user",
        "/agents/researcher/as-of?seq=3",
        "/agents/looper",
        "/agents/looper/runs/job-7",
        "/spaces",
        "/spaces/team",
        "/agents/researcher/goals",
    ]
    for page in pages:
        controls = Controls()
        controls.feed(client.get(page).text)
        assert controls.unlabelled() == [], page
        assert len(controls.ids) == len(set(controls.ids)), page
