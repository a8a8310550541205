"""Idempotency-Key: a write sent again with the same key is applied once and answered as the
first time (the MCP gateway sends a key with every call, so its retries and calls the API
finished after the gateway gave up are applied once)."""
