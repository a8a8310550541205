"""The schema's OpenAPI links: each names an operation that exists, with parameters and body
fields it takes, from fields the source response has; and following them works."""

from typing import Any

import pytest
from httpx import AsyncClient

from app.core.settings import Settings
from app.main import create_app


@pytest.fixture(scope="module")
def openapi() -> dict:
    return create_app(Settings()).openapi()


def resolve(document: dict, pointer: str) -> Any:
    """A JSON pointer (RFC 6901) into a document; list indexes are digits."""
    node = document
    for token in pointer.lstrip("#").split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def schema_at(openapi: dict, schema: dict, pointer: str) -> dict:
    """The subschema that describes the value at a JSON pointer into an instance of schema."""
    for token in pointer.split("/")[1:]:
        while "$ref" in schema or "anyOf" in schema:
            schema = resolve(openapi, schema["$ref"]) if "$ref" in schema else schema["anyOf"][0]
        schema = schema["items"] if token.isdigit() else schema["properties"][token]
    return schema


def every_link(openapi: dict):
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                for name, link in response.get("links", {}).items():
                    yield f"{method.upper()} {path} {status} {name}", response, link


def test_links_name_real_operations_parameters_and_fields(openapi):
    links = list(every_link(openapi))
    assert len(links) > 50
    for label, response, link in links:
        target = resolve(openapi, link["operationRef"])
        source = response["content"]["application/json"]["schema"]
        taken = {f"path.{parameter['name']}" for parameter in target.get("parameters", []) if parameter["in"] == "path"}
        assert set(link.get("parameters", {})) == taken, label
        expressions = [*link.get("parameters", {}).values(), *link.get("requestBody", {}).values()]
        for expression in expressions:
            assert expression.startswith("$response.body#/"), label
            schema_at(openapi, source, expression.removeprefix("$response.body#"))
        if "requestBody" in link:
            body = resolve(openapi, target["requestBody"]["content"]["application/json"]["schema"]["$ref"])
            assert set(link["requestBody"]) <= set(body["properties"]), label


def follow(link: dict, response: dict, body: dict | None = None) -> tuple[str, str, dict | None]:
    """The request a link makes from a response: method, path, and the client's body with the linked fields."""
    path, method = link["operationRef"].removeprefix("#/paths/").rsplit("/", 1)
    path = path.replace("~1", "/").replace("~0", "~")

    def value(expression: str) -> Any:
        return resolve(response, expression.removeprefix("$response.body"))

    for parameter, expression in link.get("parameters", {}).items():
        path = path.replace(f"{{{parameter.removeprefix('path.')}}}", str(value(expression)))
    linked = {field: value(expression) for field, expression in link.get("requestBody", {}).items()}
    return method.upper(), path, ({**(body or {}), **linked} if body is not None or linked else None)


async def test_following_the_links_of_a_write_revises_rolls_back_and_supersedes(client: AsyncClient, openapi):
    links = openapi["paths"]["/v1/memories"]["post"]["responses"]["201"]["links"]
    first = {"namespace": "user:links", "content": "Desk is by the window.", "key": "user:links:desk"}
    written = (await client.post("/v1/memories", json=first)).json()

    method, path, body = follow(links["ReviseMemory"], written, {"content": "Desk is by the door."})
    revised = await client.request(method, path, json=body)
    assert revised.status_code == 200, revised.text  # the version it expects came from the write

    revise_links = openapi["paths"]["/v1/memories/{memory_id}/revise"]["post"]["responses"]["200"]["links"]
    method, path, body = follow(revise_links["RollbackRevision"], revised.json())
    rolled_back = await client.request(method, path, json=body)
    assert rolled_back.status_code == 200, rolled_back.text
    assert rolled_back.json()["memories"][0]["content"] == "Desk is by the window."

    method, path, body = follow(links["SupersedeMemory"], written, {"content": "Desk is in room 4."})
    successor = await client.request(method, path, json=body)
    assert successor.status_code == 201, successor.text
    assert successor.json()["revisions"][0]["old_memory_id"] == written["memory"]["id"]
