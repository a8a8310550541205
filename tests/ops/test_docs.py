"""/docs and /redoc render offline: the page names no outside URL and the service serves every
asset it loads (Swagger UI 5, which reads OpenAPI 3.1)."""

import re

import pytest


@pytest.mark.parametrize(("page", "script"), [("/docs", "SwaggerUIBundle"), ("/redoc", "Redoc")])
async def test_docs_pages_load_only_what_the_service_serves(client, page, script):
    response = await client.get(page)
    assert response.status_code == 200
    html = response.text
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html, re.IGNORECASE), "the page must name no other host"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(asset.endswith(".js") for asset in assets)
    for asset in assets:
        served = await client.get(asset)
        assert served.status_code == 200 and len(served.content) > 1_000, asset
        if asset.endswith(".js"):
            assert script in served.text
    assert "'/openapi.json'" in html or '"/openapi.json"' in html


async def test_swagger_ui_is_a_version_that_reads_openapi_3_1(client):
    [bundle_url] = re.findall(r'src="([^"]+swagger-ui-bundle\.js)"', (await client.get("/docs")).text)
    bundle = (await client.get(bundle_url)).text
    assert (await client.get("/openapi.json")).json()["openapi"].startswith("3.1")
    assert re.search(r'"5\.\d+\.\d+"', bundle), "Swagger UI 5 is the first to read OpenAPI 3.1"
