"""OpenAPI links (OAS 3.1 Link Object): which response carries the id of a memory, lesson or
revision, and which operations take that id. Clients see how calls chain; schema-driven tests
(the stateful phase of `make fuzz`) follow them to reach what random ids never find."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Target:
    """An operation that acts on a resource: by its id where its path names one, and with
    request body fields taken from the resource's own."""

    name: str
    method: str
    path: str  # as the OpenAPI schema spells it, without FastAPI's `:uuid`
    # Request body field -> the resource's field it comes from, e.g. the version a revise expects.
    body_from: dict[str, str] = field(default_factory=dict)

    def link(self, parameter: str, at: str) -> dict[str, Any]:
        # A JSON pointer into the schema: FastAPI's generated operationIds are not meant to be named.
        escaped_path = self.path.replace("~", "~0").replace("/", "~1")
        link: dict[str, Any] = {"operationRef": f"#/paths/{escaped_path}/{self.method}"}
        if f"{{{parameter}}}" in self.path:
            link["parameters"] = {f"path.{parameter}": f"$response.body#{at}/id"}
        if self.body_from:
            # Field by field, merged into the body the client builds (OAS names one literal or expression
            # for the whole body; schemathesis evaluates the expressions in a map and merges them).
            link["requestBody"] = {name: f"$response.body#{at}/{source}" for name, source in self.body_from.items()}
        return link


@dataclass(frozen=True)
class Resource:
    """What responses carry (its `id` among its fields) and the operations that act on it."""

    parameter: str  # the path parameter its id goes into
    targets: tuple[Target, ...]

    def at(self, pointer: str) -> dict[str, dict[str, Any]]:
        """Links from a response that carries this resource at the JSON pointer (`""`: the body itself)."""
        return {target.name: target.link(self.parameter, pointer) for target in self.targets}


MEMORY = Resource(
    "memory_id",
    (
        Target("GetMemory", "get", "/v1/memories/{memory_id}"),
        Target("ForgetMemory", "delete", "/v1/memories/{memory_id}"),
        Target("ReviseMemory", "post", "/v1/memories/{memory_id}/revise", body_from={"expected_version": "version"}),
        Target("MemoryFeedback", "post", "/v1/memories/{memory_id}/feedback"),
        Target("InvalidateMemory", "post", "/v1/memories/{memory_id}/invalidate"),
        # A newer memory with the same key supersedes it (without a key: another in its namespace).
        Target("SupersedeMemory", "post", "/v1/memories", body_from={"namespace": "namespace", "key": "key"}),
    ),
)
LESSON = Resource(
    "lesson_id",
    (
        Target("GetLesson", "get", "/v1/reflections/{lesson_id}"),
        Target("LessonFeedback", "post", "/v1/reflections/{lesson_id}/feedback"),
    ),
)
REVISION = Resource(
    "revision_id",
    (
        Target("ApplyRevision", "post", "/v1/revisions/{revision_id}/apply"),
        Target("DismissRevision", "post", "/v1/revisions/{revision_id}/dismiss"),
        Target("RollbackRevision", "post", "/v1/revisions/{revision_id}/rollback"),
    ),
)


def links(*carried: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The `links` entry of a route's `responses[status]`, from `Resource.at(...)` of what the response carries."""
    return {"links": {name: link for each in carried for name, link in each.items()}}
