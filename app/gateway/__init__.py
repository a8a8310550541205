"""The MCP gateway: a separate process that gives agents hindsight's REST API as MCP tools.
It talks to the API over HTTP only and shares nothing with it but the request schemas."""
