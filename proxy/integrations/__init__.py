"""In-process integrations. Never imported by the server."""
