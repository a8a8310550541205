"""Where a memory came from, and how far it is trusted: `source.kind` is user (the person
said it), agent (the agent concluded it; the default), tool (a tool returned it) or web (read
on a page), most trusted first."""

from typing import Any, Literal

from app.core.settings import Settings

SourceKind = Literal["user", "agent", "tool", "web"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("user", "agent", "tool", "web")
DEFAULT_KIND: SourceKind = "agent"


def kind_of(source: dict[str, Any] | None) -> SourceKind:
    kind = (source or {}).get("kind")
    return kind if kind in SOURCE_KINDS else DEFAULT_KIND


def trust_of(source: dict[str, Any] | None, settings: Settings) -> float:
    """The trust weight of a memory's source (settings `trust_<kind>`)."""
    return settings.trust(kind_of(source))
