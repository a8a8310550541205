"""hindsight: long-term memory for LLM agents that corrects itself after the fact."""

from importlib.metadata import version

# The installed distribution's version: what the API and the MCP gateway report.
__version__ = version("hindsight")
