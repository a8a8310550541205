"""The hindsight tools: one per REST call, each taking the REST request model's fields (one
definition of the input, not two) plus the agent's `session_id`, and answering a short text for
the LLM with the API's JSON as structured content, described by the tool's output schema (the
REST response model's)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Literal
from uuid import UUID

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, SecretStr, TypeAdapter, ValidationError, create_model
from pydantic_core import to_jsonable_python

from app.context.schemas import ContextRequest, ContextResponse
from app.conversations.schemas import ConversationResult, ConversationWrite
from app.core.errors import Unprocessable, problem_of, validation_errors
from app.core.metrics import GATEWAY_DEGRADED
from app.gateway import render
from app.gateway.api import Api, ApiProblem, ApiUnavailable, Call
from app.gateway.arguments import ToolArguments, published_schema
from app.jobs.schemas import JobAccepted
from app.memories.schemas import MemoryDetail, MemoryWrite, WriteResponse
from app.recall.schemas import SearchRequest, SearchResponse
from app.reflections.schemas import (
    EventsRequest,
    EventsResponse,
    LessonFeedback,
    LessonResponse,
    LessonSearch,
    LessonSearchResponse,
    MemoryFeedback,
    MemoryFeedbackResponse,
)
from app.revisions.schemas import ReviewRequest, ReviewResponse, ReviseRequest, ReviseResponse

SessionId = Annotated[
    str,
    Field(min_length=1, max_length=200, description="Your current session or conversation id, the same on every call."),
]
MemoryId = Annotated[UUID, Field(description="The memory's id, as returned by hindsight_write or hindsight_search.")]
LessonId = Annotated[UUID, Field(description="The lesson's id, as returned by hindsight_lessons.")]
# The id a tool addresses, by the path parameter it fills.
ADDRESSED = {"memory_id": MemoryId, "lesson_id": LessonId}

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


class Forgotten(BaseModel):
    """What forgetting answers (the API itself answers 204, without a body)."""

    memory_id: UUID
    forgotten: Literal[True]


class Degraded(BaseModel):
    """Any tool's answer when the API did not answer in time: carry on without memory."""

    degraded: Literal[True]
    hits: list[Any] = Field(max_length=0)
    detail: str


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    method: str
    path: str
    body: type[BaseModel] | None
    # A model, or a union of models for an operation answering in more than one shape.
    response: type[BaseModel] | UnionType
    render: Callable[[dict[str, Any]], str]
    # Tools addressing one memory or lesson take its id (a key of ADDRESSED), which goes into the path.
    addressed_by: str | None = None
    annotations: ToolAnnotations = field(default_factory=lambda: WRITES)
    # Applied once however often it is sent (an Idempotency-Key); a review, which reads and judges
    # anew each time, is not.
    idempotent: bool = True


SPECS = (
    Spec(
        "hindsight_write",
        "Remember something for later sessions: a fact, preference, decision or event worth keeping. "
        "Give a `key` like `user:u1:diet` for a fact that can change, so a newer value replaces the older. "
        "hindsight notices when the new memory corrects an older one and supersedes it.",
        "POST", "/v1/memories", MemoryWrite, WriteResponse, render.write,
    ),
    Spec(
        "hindsight_search",
        "Recall what is known before answering or acting: memories relevant to `query` in the namespace(s), "
        "best first, current facts only unless `statuses` asks for superseded ones too. Give exactly one of "
        "`namespace` or `namespaces`.",
        "POST", "/v1/memories/search", SearchRequest, SearchResponse, render.search, annotations=READ_ONLY,
    ),
    Spec(
        "hindsight_get",
        "Read one memory in full: its versions, what it replaced and what replaced it.",
        "GET", "/v1/memories/{memory_id}", None, MemoryDetail, render.detail, addressed_by="memory_id",
        annotations=READ_ONLY,
    ),
    Spec(
        "hindsight_revise",
        "Correct a memory you know is wrong or outdated. Pass the version you read as `expected_version`; "
        "if someone changed it since, the call fails and you should read it again.",
        "POST", "/v1/memories/{memory_id}/revise", ReviseRequest, ReviseResponse, render.revised,
        addressed_by="memory_id",
    ),
    Spec(
        "hindsight_review",
        "Check a namespace's recent memories for contradictions with older ones and resolve them, e.g. at "
        "the end of a task or after many writes.",
        "POST", "/v1/review", ReviewRequest, ReviewResponse, render.reviewed, idempotent=False,
    ),
    Spec(
        "hindsight_feedback",
        "Say whether a recalled memory helped. Useful memories rank higher in later searches, unhelpful ones lower.",
        "POST", "/v1/memories/{memory_id}/feedback", MemoryFeedback, MemoryFeedbackResponse, render.memory_feedback,
        addressed_by="memory_id",
    ),
    Spec(
        "hindsight_forget",
        "Forget a memory that is wrong or must no longer be used (for instance when the user asks). "
        "It leaves search; its history is kept.",
        "DELETE", "/v1/memories/{memory_id}", None, Forgotten, render.forgotten, addressed_by="memory_id",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    ),
    Spec(
        "hindsight_record_events",
        "Report what happened in a task (tool calls with their arguments and results, plan steps, "
        "observations, user feedback); send `task_end` when the task finishes so failures become lessons.",
        "POST", "/v1/events", EventsRequest, EventsResponse, render.events,
    ),
    Spec(
        "hindsight_lessons",
        "Before a tool call or task, ask what past tasks taught: recommendations to follow and warnings "
        "about what failed before.",
        "POST", "/v1/reflections/search", LessonSearch, LessonSearchResponse, render.lessons, annotations=READ_ONLY,
    ),
    Spec(
        "hindsight_remember_conversation",
        "Remember the latest messages of the conversation (yours and the user's, with their ids): each is kept "
        "as it was said, facts about the user are extracted and kept current, and the session's working memory "
        "is updated. Send each turn's new messages; sending a message again stores nothing new.",
        "POST", "/v1/conversations", ConversationWrite, ConversationResult | JobAccepted, render.conversation,
    ),
    Spec(
        "hindsight_context",
        "Before answering, get what you should know for this turn within a token budget: this session's working "
        "memory, relevant long-term memories (dated, with what they replaced) and lessons, as Markdown to read.",
        "POST", "/v1/context", ContextRequest, ContextResponse, render.context, annotations=READ_ONLY,
    ),
    Spec(
        "hindsight_lesson_feedback",
        "Say whether a lesson from hindsight_lessons helped. Useful lessons gain confidence, unhelpful ones "
        "lose it and stop being recalled.",
        "POST", "/v1/reflections/{lesson_id}/feedback", LessonFeedback, LessonResponse, render.lesson_feedback,
        addressed_by="lesson_id",
    ),
)


def arguments_model(spec: Spec) -> type[ArgModelBase]:
    extra: dict[str, Any] = {"session_id": (SessionId, ...)}
    if spec.addressed_by:
        extra[spec.addressed_by] = (ADDRESSED[spec.addressed_by], ...)
    bases = (spec.body, ToolArguments) if spec.body else (ToolArguments,)
    title = "".join(part.title() for part in spec.name.split("_")) + "Arguments"
    # The request's own description (a rule across fields, such as search's one-of) stays in the schema.
    return create_model(title, __base__=bases, __doc__=spec.body.__doc__ if spec.body else None, **extra)


def output_schema(spec: Spec) -> dict[str, Any]:
    """The structured content a call answers: the REST response, or the degraded answer."""
    return {"type": "object", **TypeAdapter(spec.response | Degraded).json_schema(mode="serialization")}


class HindsightTool(Tool):
    """Arguments that do not fit answer `field: message` lines an LLM can act on, with the
    problem as structured content, instead of the SDK's dump of pydantic's error."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as invalid:
            errors = validation_errors(invalid.errors())
            text = render.field_errors(errors)
            return _result(problem_of(Unprocessable(text.splitlines()[0], errors=errors)), text, is_error=True)
        return await super().run(arguments, context, convert_result)


def _result(structured: dict[str, Any], text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured, is_error=is_error)


def build_tool(spec: Spec, api: Api, *, default_key: SecretStr | None) -> Tool:
    model = arguments_model(spec)
    sends_session = spec.body is not None and "session_id" in spec.body.model_fields

    async def run(ctx: Context, **arguments: Any) -> CallToolResult:
        session_id = arguments["session_id"] if sends_session else arguments.pop("session_id")
        path_ids = {spec.addressed_by: arguments.pop(spec.addressed_by)} if spec.addressed_by else {}
        body = {name: value for name, value in to_jsonable_python(arguments).items() if value is not None}
        call = Call(
            spec.method,
            spec.path.format(**path_ids),
            body if spec.body else None,
            session_id,
            _authorization(ctx, default_key),
            reads=spec.annotations is READ_ONLY,
            keyed=spec.idempotent and spec.annotations is not READ_ONLY,
        )
        try:
            # Only forgetting answers 204, with no body to show.
            answer = await api.send(call) or {**to_jsonable_python(path_ids), "forgotten": True}
        except ApiProblem as problem:
            return _result(problem.problem, render.problem(problem.problem), is_error=True)
        except ApiUnavailable as unavailable:
            GATEWAY_DEGRADED.labels(tool=spec.name).inc()
            detail = f"hindsight did not answer ({unavailable}); carry on without memory for now."
            return _result(Degraded(degraded=True, hits=[], detail=detail).model_dump(), detail)
        return _result(answer, spec.render(answer))

    return HindsightTool(
        fn=run,
        name=spec.name,
        description=spec.description,
        parameters=published_schema(model),
        fn_metadata=FuncMetadata(arg_model=model, output_schema=output_schema(spec)),
        is_async=True,
        context_kwarg="ctx",
        annotations=spec.annotations,
    )


def _authorization(ctx: Context, default_key: SecretStr | None) -> str | None:
    """The MCP client's own bearer token when it sent one over HTTP, else the gateway's configured key."""
    headers = ctx.headers
    if headers is not None and headers.get("authorization"):
        return headers["authorization"]
    return f"Bearer {default_key.get_secret_value()}" if default_key else None
