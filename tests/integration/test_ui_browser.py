"""The web UI in a real headless browser (Debian's chromium driven by Playwright).

`pipeline run` indexes a Pi root live and `query ui` serves it; the browser searches for a
planted term, opens the hit at its exact entry, follows an abandoned Pi branch, and sees a line
appended to the open session appear. Hostile session text must stay text. With
``SESSIONDEX_SCREENSHOTS=docs/img`` the main views are saved there (the README shows them).

Without chromium or playwright the tests fail with a plain message under CI (``ops/test`` runs
``ops/ensure-browser`` first) and skip, saying why, elsewhere.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from query.transport import Backend
from store.errors import SnapshotMissing
from tests.doubles import LivePipeline, wait_for
from tests.helpers import PiRoot, assistant, claude_line, header, jsonl, tool_result, user

pytestmark = [pytest.mark.integration, pytest.mark.browser]

T0 = 1_764_590_400_000  # 2025-12-01 12:00 UTC
HOSTILE = "<script>document.title='owned'</script><img src=x onerror=\"document.title='img'\">"
PROJECT = "/work/shop"
DATA = Path(__file__).resolve().parent.parent / "data"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _chromium() -> str:
    path = (
        os.environ.get("SESSIONDEX_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if path is None:
        _missing("Debian's chromium is not installed (run ops/ensure-browser)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[test]')")
    assert path is not None
    return path


def _shots() -> Path | None:
    folder = os.environ.get("SESSIONDEX_SCREENSHOTS")
    if not folder:
        return None
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _shot(page: Any, shots: Path, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header stays on top of a full page
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def _corpus(pi: PiRoot) -> Path:
    call = {"id": "call-t1", "name": "bash", "arguments": {"command": "pytest tests/test_cart.py"}}
    edit = {"id": "call-t2", "name": "edit", "arguments": {"path": "tests/conftest.py"}}
    failure = (
        "FAILED tests/test_cart.py::test_checkout - AssertionError: quokkaterm total 41 != 42\n"
        + "".join(f"tests/test_cart.py:{n}: in test_checkout\n    assert cart.total == 42\n"
                  for n in range(60))
    )  # fmt: skip
    s1 = pi.session(
        "2025-12-01-cart",
        [
            header("cart-1", PROJECT, T0),
            user("u1", None, f"The checkout test fails since yesterday, can you look? {HOSTILE}",
                 T0 + 1_000),
            assistant("a1", "u1", "Let me run the test first.", T0 + 2_000, call),
            tool_result("t1", "a1", "bash", failure, T0 + 3_000, error=True),
            assistant("a2", "t1", "The quokkaterm rounding fixture is stale: it still uses the "
                      "old tax table. I will update the fixture.", T0 + 4_000, edit),
            tool_result("t2", "a2", "edit", "Edited tests/conftest.py (+3 -3)", T0 + 5_000),
            # an abandoned branch from the first prompt: Pi's /tree went back to u1
            assistant("b1", "u1", "Alternatively we could pin wombatterm to the old release.",
                      T0 + 6_000),
            user("b2", "b1", "no, let's not pin it", T0 + 7_000),
            user("u2", "t2", "Great, run the whole suite again.", T0 + 8_000),
        ],
        cwd=PROJECT,
    )  # fmt: skip
    pi.session(
        "2025-11-30-docs",
        [
            header("docs-1", "/work/docs", T0 - 86_400_000),
            user("d1", None, "Rewrite the install section of the README.", T0 - 86_390_000),
            assistant("d2", "d1", "Done: the install section now starts with pip.",
                      T0 - 86_380_000),
            # the person named the session (Pi's /name): the list shows the name
            {"type": "session_info", "id": "d3", "parentId": "d2", "name": "README install"},
        ],
        cwd="/work/docs",
    )  # fmt: skip
    # a Pi Fabric run: its operations (one of them a subagent, agents.run) nest under the carrier
    fabric = pi.root / "--work-fabric--"
    fabric.mkdir(parents=True)
    shutil.copyfile(DATA / "pi" / "normalize_trace.jsonl", fabric / "trace.jsonl")
    uid = "c0ffee00-0000-4000-8000-0000000000aa"
    folder = pi.base / "claude" / "-work-api"
    folder.mkdir(parents=True)
    run = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make lint"}}
    said = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "lint: 3 warnings",
            "is_error": False}  # fmt: skip
    (folder / f"{uid}.jsonl").write_bytes(
        jsonl(
            [
                claude_line("user", "c1", None, T0 - 3_600_000, "Add a lint step to the API CI.",
                            session=uid, cwd="/work/api"),
                claude_line("assistant", "c2", "c1", T0 - 3_590_000,
                            [{"type": "text", "text": "Running the linter first."}, run],
                            session=uid, cwd="/work/api", message_id="m1"),
                claude_line("user", "c3", "c2", T0 - 3_580_000, [said], session=uid,
                            cwd="/work/api"),
            ]
        )
    )  # fmt: skip
    # its subagent's own file, listed under it
    (folder / uid / "subagents").mkdir(parents=True)
    (folder / uid / "subagents" / "agent-lint1.jsonl").write_bytes(
        jsonl(
            [
                claude_line("user", "s1", None, T0 - 3_585_000, "Find the lint config.",
                            session=uid, cwd="/work/api"),
            ]
        )
    )  # fmt: skip
    return s1


def _start_ui(config_path: Path) -> tuple[subprocess.Popen[str], str]:
    log = config_path.with_name("query-ui.log").open("ab")
    ui = subprocess.Popen(
        [sys.executable, "-m", "query", "ui", "--config", str(config_path), "--port", "0",
         "--cwd", PROJECT],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )  # fmt: skip
    log.close()
    assert ui.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(ui.stdout, selectors.EVENT_READ)
    if not sel.select(timeout=60):
        ui.kill()
        ui.communicate()
        raise AssertionError("query ui printed no URL within 60 s")
    line = ui.stdout.readline()
    assert line.startswith("sessiondex UI: http://127.0.0.1:"), line
    return ui, line.split()[-1]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[dict[str, Any]]:
    chromium = _chromium()
    pi = PiRoot(tmp_path)
    config = pi.write_config()
    assert config.path is not None
    s1 = _corpus(pi)
    pipeline = LivePipeline(config.path).start()
    ui: subprocess.Popen[str] | None = None
    try:
        pipeline.wait_ready(config.index_dir)

        def indexed() -> bool:
            with Backend(config, server="off") as b:
                try:
                    found = b.recall({"query": "quokkaterm", "scope": "global"}, cwd="/")
                except SnapshotMissing:
                    return False
                return bool(found["hits"])

        wait_for(indexed, timeout=90, interval=0.1, what="the first build")
        ui, url = _start_ui(config.path)
        yield {"url": url, "chromium": chromium, "session": s1, "index": config.index_dir}
    finally:
        if ui is not None:
            ui.send_signal(signal.SIGTERM)
            ui.communicate(timeout=30)
        pipeline.stop()


def test_search_open_branch_and_live_append_in_a_real_browser(live: dict[str, Any]) -> None:
    from playwright.sync_api import expect, sync_playwright

    shots = _shots()
    dialogs: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=live["chromium"],
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page(viewport={"width": 1240, "height": 860})
            page.set_default_timeout(30_000)
            expect.set_options(timeout=30_000)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))

            # The printed URL: the token becomes a cookie and leaves the address bar.
            page.goto(live["url"])
            assert "token=" not in page.url
            expect(page.locator("#status")).to_contain_text("generation")

            # Search for the planted term.
            page.fill("input[name=q]", "quokkaterm")
            page.press("input[name=q]", "Enter")
            hits = page.locator(".hit")
            expect(hits.first).to_be_visible()
            expect(page.locator(".coverage")).to_contain_text("Coverage: complete")
            expect(page.locator(".hit mark").first).to_have_text("quokkaterm")
            # The failed tool result is marked as failed.
            expect(page.locator(".hit.failed .badge.bad").first).to_have_text("failed")
            if shots:
                _shot(page, shots, "search")

            # A filter chip narrows the same search; removing it widens it again.
            page.locator("details.filters summary").click()
            page.select_option("select[name=outcome]", "failed")
            page.click("button[type=submit]")
            expect(page.locator(".chip[data-chip=outcome]")).to_contain_text("outcome: failed")
            expect(page.locator(".hit.failed").first).to_be_visible()
            expect(page.locator(".hit:not(.failed)")).to_have_count(0)
            page.locator(".chip[data-chip=outcome] button").click()
            expect(page.locator(".chip")).to_have_count(0)
            expect(page.locator(".hit", has_text="rounding fixture is stale")).to_be_visible()

            # Open the assistant's hit: the session view lands on that exact entry.
            stale = page.locator(".hit", has_text="rounding fixture is stale")
            stale.locator("a.open").click()
            target = page.locator(".entry.target")
            expect(target).to_contain_text("rounding fixture is stale")
            expect(target).to_have_attribute("data-entry", "a2")
            expect(page.locator(".entry.role-user").first).to_contain_text("<script>")
            # long tool output is collapsed behind a toggle
            expect(page.locator(".entry.failed details.long summary")).to_contain_text("more")
            if shots:
                _shot(page, shots, "session")

            # Follow the abandoned branch, then come back to the active path.
            page.locator(".fork", has_text="wombatterm").click()
            expect(page.locator("#abandoned")).to_be_visible()
            expect(page.locator(".entry", has_text="let's not pin it")).to_be_visible()
            expect(page.locator(".entry", has_text="rounding fixture")).to_have_count(0)
            if shots:
                _shot(page, shots, "branch")
            page.locator("#abandoned button").click()
            expect(page.locator(".entry", has_text="run the whole suite")).to_be_visible()

            # Append a line to the open session: it appears without a reload.
            line = user("u3", "u2", "Appended while open: koalaterm passes now.", T0 + 9_000)
            with Path(live["session"]).open("ab") as f:
                f.write(jsonl([line]))
            written = time.monotonic()
            appended = page.locator(".entry", has_text="koalaterm passes now")
            expect(appended).to_be_visible(timeout=60_000)
            print(f"\nappend → visible in the open session: {time.monotonic() - written:.3f} s")

            # Subagent work nests under the entry that ran it (collapsed when there is much).
            page.goto(live["url"].split("?")[0] + "#/sessions")
            page.locator("tr[data-session='pi:trace-sess'] a").click()
            carrier = page.locator(".entry[data-entry='r1']")
            carrier.locator("details.nested > summary").click()
            nested = carrier.locator(".nested .entry[data-entry='r1/5']")
            expect(nested).to_contain_text("agents.run")
            expect(carrier.locator(".nested .entry.failed").first).to_be_visible()

            # Sessions list (newest first, grouped by project) and the catalog.
            page.goto(live["url"].split("?")[0] + "#/sessions")
            row = page.locator("tr[data-session='pi:cart-1'] td.prompt")
            expect(row).to_contain_text("<script>document.title")
            # what happened in it, from the listing itself (u3 was appended above)
            expect(row).to_contain_text("3 prompts, 2 tool results 1 failed")
            expect(page.locator("table.sessions")).not_to_contain_text("null")
            expect(row.locator(".badge.bad")).to_contain_text("1 failed")
            named = page.locator("tr[data-session='pi:docs-1'] td.prompt")
            expect(named).to_contain_text("README install")
            expect(named).to_have_attribute("title", "Rewrite the install section of the README.")
            expect(page.locator("tr.group").first).to_contain_text(PROJECT)
            # a subagent's file right under the session that spawned it
            parent = page.locator("tr[data-session='claude:c0ffee00-0000-4000-8000-0000000000aa']")
            child = parent.locator("xpath=following-sibling::tr[1]")
            expect(child).to_have_attribute(
                "data-parent", "claude:c0ffee00-0000-4000-8000-0000000000aa"
            )
            expect(child).to_contain_text("subagent")
            expect(parent).to_contain_text("+1")
            if shots:
                _shot(page, shots, "sessions")
            page.goto(live["url"].split("?")[0] + "#/catalog")
            bash_head = page.locator(".tree-cat li[data-ref='pi.bash'] .badge.bad")
            expect(bash_head).to_contain_text("failed")
            expect(page.locator(".tree-cat li[data-ref='claude.Bash']")).to_be_visible()
            if shots:
                _shot(page, shots, "catalog")

            # Hostile text never ran: no dialog, no injected node, the title is ours.
            assert page.title() == "sessiondex"
            assert page.locator("script").count() == 1
            assert page.locator("img[src=x]").count() == 0
            assert dialogs == [] and errors == []
        finally:
            browser.close()


def test_a_page_without_the_token_is_refused_in_the_browser(live: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=live["chromium"],
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page()
            response = page.goto(live["url"].split("?")[0])
            assert response is not None and response.status == 403
            assert "refused" in page.content()
        finally:
            browser.close()
