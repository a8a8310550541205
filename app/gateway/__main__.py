"""`python -m app.gateway [--transport http|stdio] [--api-url URL]`: serve the hindsight tools over MCP."""

import argparse
import logging

import anyio
import uvicorn

from app.core.logging import configure_logging
from app.core.settings import settings
from app.gateway.api import Api
from app.gateway.server import build_server

logger = logging.getLogger("hindsight.gateway")


async def serve(transport: str, host: str, port: int, api_url: str) -> None:
    api = Api(api_url, timeout_seconds=settings.gateway_timeout_seconds)
    server = build_server(settings, api)
    logger.info("calling the hindsight API at %s", api_url)
    try:
        if transport == "stdio":
            await server.run_stdio_async()
        else:
            app = server.streamable_http_app(streamable_http_path=settings.gateway_path, host=host)
            # log_config=None: uvicorn's lines go through the same handler as everything else.
            config = uvicorn.Config(app, host=host, port=port, log_level=settings.log_level.lower(), log_config=None)
            await uvicorn.Server(config).serve()
    finally:
        await api.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hindsight-gateway", description=__doc__)
    parser.add_argument("--transport", choices=("http", "stdio"), default="http")
    parser.add_argument("--host", default=settings.gateway_host)
    parser.add_argument("--port", type=int, default=settings.gateway_port)
    parser.add_argument(
        "--api-url",
        default=settings.gateway_api_url or settings.served_api_url,
        help="the REST API to call (default: HINDSIGHT_GATEWAY_API_URL, else the API at HINDSIGHT_HOST:HINDSIGHT_PORT)",
    )
    args = parser.parse_args(argv)
    # stdout carries the stdio protocol, so logs go to stderr (configure_logging's stream).
    configure_logging(settings.log_level, settings.log_format)
    anyio.run(serve, args.transport, args.host, args.port, args.api_url)


if __name__ == "__main__":
    main()
