"""Tool arguments as LLMs send them. The REST models are strict about JSON types, but models
often write numbers and booleans as strings ("5", "0.8", "true"); the gateway reads such a
string as the JSON it spells wherever the tool's schema wants a number or boolean and no
string. And the published schema keeps to what LLM providers accept."""

import json
from functools import cache
from typing import Any

from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import model_validator

_SCALAR_TYPES: dict[str, tuple[type, ...]] = {"integer": (int,), "number": (int, float), "boolean": (bool,)}
# Cross-field rules the REST models state as JSON Schema combinators at the root. Tool input
# schemas may not have them there (providers refuse the whole tool list); validation still applies them.
_ROOT_COMBINATORS = ("oneOf", "anyOf", "allOf")


def _branches(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives a value may match, with references resolved and unions flattened."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    union = schema.get("anyOf") or schema.get("oneOf")
    # A union beside properties is an extra rule on one object (exactly one of two fields), not alternatives.
    if union and "properties" not in schema:
        return [branch for alternative in union for branch in _branches(alternative, defs)]
    return [schema]


def _types(branch: dict[str, Any]) -> set[str]:
    kind = branch.get("type")
    if kind is None:
        return {"any"}  # no type stated: a string may be just what it wants
    return {kind} if isinstance(kind, str) else set(kind)


def read_spelled_scalars(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """`value` with strings decoded where `schema` wants a number or boolean and never a string."""
    branches = _branches(schema, defs)
    if isinstance(value, dict):
        objects = [branch for branch in branches if "properties" in branch]
        return {
            name: read_spelled_scalars(inner, {"anyOf": wanted}, defs)
            if (wanted := [branch["properties"][name] for branch in objects if name in branch["properties"]])
            else inner
            for name, inner in value.items()
        }
    if isinstance(value, list):
        items = [branch["items"] for branch in branches if "items" in branch]
        return [read_spelled_scalars(inner, {"anyOf": items}, defs) for inner in value] if items else value
    if not isinstance(value, str):
        return value
    types = set().union(*map(_types, branches))
    scalars = types & _SCALAR_TYPES.keys()
    if not scalars or types & {"string", "any"}:
        return value
    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    fits = isinstance(decoded, tuple(kind for name in scalars for kind in _SCALAR_TYPES[name]))
    # True is an int to Python, not to JSON Schema.
    return decoded if fits and (not isinstance(decoded, bool) or "boolean" in scalars) else value


@cache
def _validation_schema(model: type[ArgModelBase]) -> dict[str, Any]:
    return model.model_json_schema()


class ToolArguments(ArgModelBase):
    """Base of every tool's arguments model."""

    @model_validator(mode="before")
    @classmethod
    def _read_spelled_scalars(cls, data: Any) -> Any:
        schema = _validation_schema(cls)
        return read_spelled_scalars(data, schema, schema.get("$defs", {}))


def published_schema(model: type[ArgModelBase]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    return {name: part for name, part in schema.items() if name not in _ROOT_COMBINATORS}
