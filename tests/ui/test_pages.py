"""The viewer over HTTP: sign-in, CSRF on every form, scope, hostile input answered 4xx."""

import re

NS = "user:viewer"


async def write(client, content: str, namespace: str = NS, **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": namespace, "content": content, **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()["memory"]


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


async def test_open_mode_shows_a_banner_and_every_page(client):
    memory = await write(client, "User's bike is a green Brompton.")
    home = await client.get("/ui")
    assert home.status_code == 200 and "Open mode" in home.text and NS in home.text
    assert "default-src 'self'" in home.headers["content-security-policy"]
    cookie = home.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    for url in (
        f"/ui/memories?namespace={NS}",
        f"/ui/memories?namespace={NS}&q=bike",
        f"/ui/memories/{memory['id']}",
        "/ui/pending",
        f"/ui/lessons?namespace={NS}",
        f"/ui/lessons/report?namespace={NS}",
    ):
        page = await client.get(url)
        assert page.status_code == 200, (url, page.text[:300])
    searched = await client.get(f"/ui/memories?namespace={NS}&q=which bike")
    assert "Brompton" in searched.text and "semantic" in searched.text and "vector" in searched.text


async def test_forms_need_their_csrf_token_and_a_revise_goes_through_the_service(client):
    memory = await write(client, "User drinks oat milk.")
    page = await client.get(f"/ui/memories/{memory['id']}")
    token = csrf_of(page.text)
    forged = await client.post(
        f"/ui/memories/{memory['id']}/revise", data={"content": "User drinks soy milk.", "expected_version": "1"}
    )
    assert forged.status_code == 303 and "expired" in forged.headers["location"]
    assert (await client.get(f"/v1/memories/{memory['id']}")).json()["memory"]["content"] == "User drinks oat milk."
    done = await client.post(
        f"/ui/memories/{memory['id']}/revise",
        data={"csrf": token, "content": "User drinks soy milk.", "expected_version": "1"},
    )
    assert done.status_code == 303 and "notice=Revised" in done.headers["location"]
    assert (await client.get(f"/v1/memories/{memory['id']}")).json()["memory"]["content"] == "User drinks soy milk."
    stale = await client.post(
        f"/ui/memories/{memory['id']}/revise",
        data={"csrf": token, "content": "User drinks rice milk.", "expected_version": "1"},
    )
    assert "error=" in stale.headers["location"]
    secret = await client.post(
        f"/ui/memories/{memory['id']}/revise",
        data={"csrf": token, "content": "password=hunter2hunter2", "expected_version": "2"},
    )
    assert "error=" in secret.headers["location"] and "sensitive" in secret.headers["location"]
    assert (await client.post(f"/ui/memories/{memory['id']}/explode", data={"csrf": token})).status_code == 422
    assert (await client.get("/ui/memories?namespace=bad namespace!")).status_code == 422
    assert (await client.get("/ui/static/../../etc/passwd")).status_code == 404


async def test_with_keys_the_viewer_signs_in_and_shows_only_the_keys_namespaces(client, settings, monkeypatch):
    await write(client, "Alice likes jazz.", namespace="user:alice")
    await write(client, "Bob likes techno.", namespace="user:bob")
    monkeypatch.setattr(settings, "api_keys", {"k-alice": ["user:alice"]})
    assert (await client.get("/ui")).headers["location"] == "/ui/login"
    login = await client.get("/ui/login")
    token = csrf_of(login.text)
    wrong = await client.post("/ui/login", data={"csrf": token, "key": "nope"})
    assert "not%20valid" in wrong.headers["location"] or "not+valid" in wrong.headers["location"]
    no_csrf = await client.post("/ui/login", data={"key": "k-alice"})
    assert "expired" in no_csrf.headers["location"]
    signed = await client.post("/ui/login", data={"csrf": token, "key": "k-alice"})
    assert signed.headers["location"] == "/ui" and "k-alice" not in signed.headers["set-cookie"]
    home = await client.get("/ui")
    assert "user:alice" in home.text and "user:bob" not in home.text and "Open mode" not in home.text
    refused = await client.get("/ui/memories?namespace=user:bob")
    assert refused.status_code == 403
    client.cookies.set("hindsight_ui", "forged.value.here", path="/ui")
    assert (await client.get("/ui")).headers["location"] == "/ui/login"
