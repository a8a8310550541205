"""`python -m app.gateway [--transport http|stdio]`: serve the hindsight tools over MCP."""

import argparse
import logging

import anyio
import uvicorn

from app.core.settings import settings
from app.gateway.api import Api
from app.gateway.server import build_server


async def serve(transport: str, host: str, port: int) -> None:
    api = Api(settings.gateway_api_url, timeout_seconds=settings.gateway_timeout_seconds)
    server = build_server(settings, api)
    try:
        if transport == "stdio":
            await server.run_stdio_async()
        else:
            app = server.streamable_http_app(streamable_http_path=settings.gateway_path, host=host)
            config = uvicorn.Config(app, host=host, port=port, log_level=settings.log_level.lower())
            await uvicorn.Server(config).serve()
    finally:
        await api.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hindsight-gateway", description=__doc__)
    parser.add_argument("--transport", choices=("http", "stdio"), default="http")
    parser.add_argument("--host", default=settings.gateway_host)
    parser.add_argument("--port", type=int, default=settings.gateway_port)
    args = parser.parse_args(argv)
    # stdout carries the stdio protocol, so logs go to stderr (basicConfig's default).
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    anyio.run(serve, args.transport, args.host, args.port)


if __name__ == "__main__":
    main()
