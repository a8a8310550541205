"""The viewer in a real Chromium (the system's, driven by Playwright): sign in, find a memory by
search, open it, see its chain, revise it, apply a pending revision, purge a memory. A
screenshot of each page goes to build/screenshots/ (two of them are in the README)."""

import asyncio
import os
import shutil
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from playwright.async_api import Browser, Page, async_playwright, expect
from sqlalchemy import text

from tests.conftest import _app

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
KEY = "k-viewer-test"


def chromium() -> str:
    """The system's Chromium: `make test` installs Debian's package when it is missing."""
    found = os.environ.get("HINDSIGHT_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("Chromium is needed for the viewer's browser tests: install it (Debian: apt-get install chromium)")
    return found


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One browser for the whole session: starting Chromium is the slow part."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium(), headless=True, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
        )
        yield launched
        await launched.close()


@pytest.fixture
async def served(settings, engine, embedder) -> AsyncIterator[tuple[str, str]]:
    """The service on a free loopback port (committing, keys on), and the namespace the key may see."""
    namespace = f"user:ui{uuid.uuid4().hex[:10]}"
    app = _app(settings.model_copy(update={"api_keys": {KEY: [namespace]}}), engine, embedder)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", namespace
    finally:
        server.should_exit = True
        await task
        async with engine.begin() as connection:
            for table in ("revision_log", "erasures", "memories", "namespace_state"):
                await connection.execute(text(f"DELETE FROM {table} WHERE namespace = :ns"), {"ns": namespace})


async def seed(base: str, namespace: str) -> dict[str, dict]:
    """A supersede chain, a pending revision (a web source may not replace what the user said) and a memory to purge."""
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {KEY}"}) as api:

        async def write(content: str, **fields) -> dict:
            response = await api.post("/v1/memories", json={"namespace": namespace, "content": content, **fields})
            assert response.status_code == 201, response.text
            return response.json()["memory"]

        home_key = f"{namespace}:home"
        lyon = await write(
            "User lives in Lyon.", key=home_key, created_at="2026-03-01T09:00:00+00:00", source={"kind": "user"}
        )
        nantes = await write("User lives in Nantes.", key=home_key, source={"kind": "user"})
        drink = await write("User drinks green tea every morning.", key=f"{namespace}:drink", source={"kind": "user"})
        rumour = await write("User drinks espresso every morning.", key=f"{namespace}:drink", source={"kind": "web"})
        secret = await write("User's childhood nickname was Pickle.")
        pending = (await api.get("/v1/revisions", params={"namespace": namespace, "status": "pending"})).json()[
            "revisions"
        ]
        assert [r["new_memory_id"] for r in pending] == [rumour["id"]]
    return {"lyon": lyon, "nantes": nantes, "drink": drink, "rumour": rumour, "secret": secret}


async def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


async def test_a_person_signs_in_searches_revises_applies_and_purges(browser, served):
    base, namespace = served
    memories = await seed(base, namespace)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    try:
        # Sign in: the viewer sends anyone without a session to the sign-in form.
        await page.goto(f"{base}/ui")
        await expect(page).to_have_url(f"{base}/ui/login")
        await shot(page, "01-sign-in")
        await page.get_by_label("API key").fill("not-a-key")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("alert")).to_contain_text("not valid")
        await page.get_by_label("API key").fill(KEY)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="Namespaces")).to_be_visible()
        await expect(page.get_by_role("link", name=namespace)).to_be_visible()
        await shot(page, "02-namespaces")

        # Find a memory by search: the real search, with each hit's score parts.
        await page.get_by_role("link", name=namespace).click()
        await page.wait_for_url("**/ui/memories?namespace=*")
        await page.wait_for_load_state("load")  # the page's script is in
        await page.keyboard.press("/")  # the search box takes the focus, as on most search pages
        await expect(page.get_by_label("Search (the real search, explained)")).to_be_focused()
        await page.keyboard.type("where does the user live?")
        await page.keyboard.press("Enter")
        hit = page.locator("table.hits").get_by_role("link", name="User lives in Nantes.")
        await expect(hit).to_be_visible()
        await expect(page.locator("table.hits td.parts").first).to_contain_text("semantic")
        await shot(page, "03-search")

        # Open it and see its chain: Lyon before it.
        await hit.click()
        await expect(page.locator("p.content")).to_have_text("User lives in Nantes.")
        await expect(page.locator("ol.chain")).to_contain_text("User lives in Lyon.")
        await shot(page, "04-memory")

        # Revise it, from the version it shows.
        await page.get_by_label("Revise the content").fill("User lives in Nantes, by the Loire.")
        await page.get_by_role("button", name="Revise", exact=True).click()
        await expect(page.get_by_role("status").filter(has_text="Revised")).to_be_visible()
        await expect(page.locator("p.content")).to_have_text("User lives in Nantes, by the Loire.")
        await expect(page.locator("ol.timeline li").first).to_contain_text("User lives in Nantes, by the Loire.")
        await expect(page.locator("ol.timeline li").last).to_contain_text("User lives in Nantes.")

        # Apply the pending revision: the web rumour replaces the user's word only because a person said so.
        await page.goto(f"{base}/ui/pending?namespace={namespace}")
        card = page.locator("article.pending")
        await expect(card).to_contain_text("User drinks green tea every morning.")
        await expect(card).to_contain_text("User drinks espresso every morning.")
        await shot(page, "05-pending")
        await card.get_by_role("button", name="Apply").click()
        await expect(page.get_by_role("status").filter(has_text="Applied")).to_be_visible()
        await expect(page.locator("article.pending")).to_have_count(0)

        # Purge a memory: asked to confirm, then gone from everywhere.
        await page.goto(f"{base}/ui/memories/{memories['secret']['id']}")
        page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
        await page.get_by_role("button", name="Purge for good").click()
        await expect(page.get_by_role("status").filter(has_text="Purged")).to_be_visible()
        await expect(page.get_by_text("Pickle")).to_have_count(0)
        await shot(page, "06-after-purge")

        await page.goto(f"{base}/ui/lessons?namespace={namespace}")
        await expect(page.get_by_role("heading", name="Recommendations")).to_be_visible()
        await shot(page, "07-lessons")
    finally:
        await context.close()
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {KEY}"}) as api:
        assert (await api.get(f"/v1/memories/{memories['secret']['id']}")).status_code == 404
        drink = (await api.get(f"/v1/memories/{memories['drink']['id']}")).json()["memory"]
        assert drink["status"] == "superseded" and drink["superseded_by"] == memories["rumour"]["id"]


async def test_the_memory_page_reads_on_a_phone_without_sideways_scrolling(browser, served):
    base, namespace = served
    memories = await seed(base, namespace)
    context = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = await context.new_page()
    try:
        await page.goto(f"{base}/ui/login")
        await page.get_by_label("API key").fill(KEY)
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("heading", name="Namespaces")).to_be_visible()
        await page.goto(f"{base}/ui/memories/{memories['nantes']['id']}")
        await expect(page.locator("p.content")).to_be_visible()
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        await shot(page, "08-memory-phone")
    finally:
        await context.close()
