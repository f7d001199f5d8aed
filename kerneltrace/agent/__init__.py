"""The coding-agent interface: bounded, ranked answers over analyses loaded once (MCP server)."""
