"""The memory viewer at /ui: server-rendered pages, plain HTML forms (they work without
JavaScript), each form carrying the CSRF token of the signed sign-in cookie. Not part of the
OpenAPI schema: it is a client of the same services, not an API."""

from importlib import resources
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs, urlencode
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from app.core.database import SessionDep
from app.core.dependencies import EmbedderDep, ReadsDep, SessionsDep, SettingsDep
from app.core.errors import Forbidden, NotFound
from app.memories.schemas import NAMESPACE_PATTERN
from app.recall.router import SearchCacheDep
from app.reflections import service as reflections
from app.revisions.dependencies import RevisionContextDep
from app.ui import repository, service, signin

router = APIRouter(prefix="/ui", include_in_schema=False)

templates = Environment(loader=PackageLoader("app.ui", "templates"), autoescape=select_autoescape(["html"]))
STATIC = {"app.js": "text/javascript", "style.css": "text/css"}
# Scripts and styles from this service only; nothing may frame the viewer.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
ACTIONS = Literal["revise", "invalidate", "forget", "purge", "useful", "not-useful"]
DECISIONS = Literal["apply", "dismiss", "rollback"]
Namespace = Annotated[str | None, Query(max_length=200, pattern=NAMESPACE_PATTERN)]
Short = Annotated[str | None, Query(max_length=400)]


def _page(request: Request, template: str, viewer: signin.Viewer | None, **context: Any) -> HTMLResponse:
    notice, error = request.query_params.get("notice", "")[:300], request.query_params.get("error", "")[:300]
    csrf = viewer.csrf if viewer and viewer.csrf else signin.csrf_token(request)
    fresh = not csrf
    if fresh:  # the first page a browser sees issues the token its forms will carry
        csrf = signin.new_token()
    response = HTMLResponse(
        templates.get_template(template).render(
            viewer=viewer, csrf=csrf, notice=notice, error=error, path=request.url.path, **context
        ),
        headers=HEADERS,
    )
    if fresh:
        signin.issue(request, response, principal=viewer.access.principal if viewer else None, csrf=csrf)
    return response


def _to(url: str, **params: str) -> RedirectResponse:
    query = urlencode({name: value for name, value in params.items() if value})
    joined = f"{url}{'&' if '?' in url else '?'}{query}" if query else url
    return RedirectResponse(joined, status_code=303, headers=HEADERS)


def _login() -> RedirectResponse:
    return _to("/ui/login")


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=20, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {name: values[0] for name, values in fields.items() if values}


def _safe_next(value: str | None, default: str) -> str:
    """Only back into the viewer: a crafted `next` cannot send the browser elsewhere."""
    if value and value.startswith("/ui") and not value.startswith("//") and "\\" not in value and len(value) < 500:
        return value
    return default


@router.get("/static/{name}")
async def static(name: Annotated[str, Path(max_length=40)]) -> Response:
    if name not in STATIC:
        raise NotFound("no such file")
    content = resources.files("app.ui").joinpath("static", name).read_bytes()
    return Response(
        content, media_type=STATIC[name], headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"}
    )


@router.get("/login")
async def login_page(request: Request) -> Response:
    viewer = signin.current(request)
    if viewer is not None and not viewer.open_mode:
        return _to("/ui")
    return _page(request, "login.html", None)


@router.post("/login")
async def login(request: Request) -> Response:
    form = await _form(request)
    if not signin.csrf_ok(request, form.get("csrf")):
        return _to("/ui/login", error="The form expired: try again.")
    principal = signin.sign_in(request, form.get("key", "")[:500])
    if principal is None:
        return _to("/ui/login", error="That API key is not valid.")
    response = _to("/ui")
    signin.issue(request, response, principal=principal)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = await _form(request)
    response = _to("/ui/login")
    if signin.csrf_ok(request, form.get("csrf")):
        signin.sign_out(response)
    return response


@router.get("")
async def home(request: Request, session: SessionDep) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    return _page(request, "namespaces.html", viewer, **await service.overview(session, viewer.access))


@router.get("/memories")
async def memories_page(
    request: Request,
    session: SessionDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    reads: ReadsDep,
    sessions: SessionsDep,
    cache: SearchCacheDep,
    namespace: Namespace = None,
    status: Annotated[str | None, Query(max_length=20)] = None,
    type: Annotated[str | None, Query(max_length=20)] = None,  # noqa: A002  (the filter's name in the URL)
    key_prefix: Short = None,
    text: Short = None,
    q: Annotated[str | None, Query(max_length=1_000)] = None,
) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    if namespace is None:
        return _to("/ui", error="Choose a namespace.")
    viewer.access.check(namespace)
    found = None
    if q and q.strip():
        found = await service.search(
            session,
            query=q,
            namespace=namespace,
            embedder=embedder,
            settings=settings,
            reads=reads,
            sessions=sessions,
            cache=cache,
        )
    listed = await repository.filtered_memories(
        session, namespace=namespace, status=status, memory_type=type, key_prefix=key_prefix, contains=text
    )
    filters = {
        "status": status or "",
        "type": type or "",
        "key_prefix": key_prefix or "",
        "text": text or "",
        "q": q or "",
    }
    return _page(request, "memories.html", viewer, namespace=namespace, memories=listed, found=found, filters=filters)


@router.get("/memories/{memory_id:uuid}")
async def memory_page(request: Request, memory_id: UUID, session: SessionDep, settings: SettingsDep) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    page = await service.memory_page(session, memory_id=memory_id, access=viewer.access, settings=settings)
    return _page(request, "memory.html", viewer, **page)


async def _act(request: Request, session: Any, context: Any, *, action: str, target: UUID, back: str) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    form = await _form(request)
    if not signin.csrf_ok(request, form.get("csrf")):
        return _to(back, error="The form expired: reload the page and try again.")
    done, message = await service.act(
        service.Runtime(session, viewer.access, context), action=action, target=target, form=form
    )
    back = _safe_next(form.get("next"), back) if done else back
    return _to(back, notice=message) if done else _to(back, error=message)


@router.post("/memories/{memory_id:uuid}/{action}")
async def memory_action(
    request: Request, memory_id: UUID, action: ACTIONS, session: SessionDep, context: RevisionContextDep
) -> Response:
    return await _act(request, session, context, action=action, target=memory_id, back=f"/ui/memories/{memory_id}")


@router.post("/revisions/{revision_id:uuid}/{action}")
async def revision_action(
    request: Request, revision_id: UUID, action: DECISIONS, session: SessionDep, context: RevisionContextDep
) -> Response:
    return await _act(request, session, context, action=action, target=revision_id, back="/ui/pending")


@router.get("/pending")
async def pending_page(request: Request, session: SessionDep, namespace: Namespace = None) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    if namespace is not None:
        viewer.access.check(namespace)
    return _page(
        request,
        "pending.html",
        viewer,
        namespace=namespace,
        **await service.pending(session, namespace=namespace, access=viewer.access),
    )


@router.get("/lessons")
async def lessons_page(request: Request, session: SessionDep, namespace: Namespace = None) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    if namespace is None:
        return _to("/ui", error="Choose a namespace.")
    viewer.access.check(namespace)
    lessons = await repository.lessons(session, namespace=namespace)
    return _page(request, "lessons.html", viewer, namespace=namespace, lessons=lessons)


@router.get("/lessons/report")
async def lessons_report(request: Request, session: SessionDep, namespace: Namespace = None) -> Response:
    viewer = signin.current(request)
    if viewer is None:
        return _login()
    if namespace is None:
        raise Forbidden("name a namespace")
    viewer.access.check(namespace)
    markdown = await reflections.report(session, namespace=namespace)
    return PlainTextResponse(markdown, media_type="text/markdown; charset=utf-8", headers=HEADERS)


@router.post("/lessons/{lesson_id:uuid}/{action}")
async def lesson_action(
    request: Request,
    lesson_id: UUID,
    action: Literal["lesson-useful", "lesson-not-useful"],
    session: SessionDep,
    context: RevisionContextDep,
) -> Response:
    return await _act(request, session, context, action=action, target=lesson_id, back="/ui")
