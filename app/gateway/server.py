"""The gateway's MCP server: the hindsight tools, bound to one API client."""

from mcp.server import MCPServer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app import __version__
from app.core.metrics import GATEWAY_REGISTRY
from app.core.settings import Settings
from app.gateway.api import Api
from app.gateway.tools import SPECS, build_tool

INSTRUCTIONS = (
    "hindsight is your long-term memory. Search it before answering about the user or past work, write what "
    "you learn, correct what turned out wrong, and ask for lessons before risky tool calls. Every call takes "
    "your session_id. A result with degraded=true means memory is unavailable right now: carry on without it."
)


def build_server(settings: Settings, api: Api) -> MCPServer:
    tools = [build_tool(spec, api, default_key=settings.gateway_api_key) for spec in SPECS]
    server = MCPServer(
        "hindsight", version=__version__, instructions=INSTRUCTIONS, tools=tools, log_level=settings.log_level.upper()
    )

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)
    async def healthz(_: Request) -> JSONResponse:
        """Alive; says nothing of the API, since calls answer degraded while it is away."""
        return JSONResponse({"status": "ok"})

    @server.custom_route("/metrics", methods=["GET"], include_in_schema=False)
    async def metrics(_: Request) -> Response:
        """This gateway process's metrics (over HTTP only: stdio has nowhere to serve them)."""
        return Response(generate_latest(GATEWAY_REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return server
