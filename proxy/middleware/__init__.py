"""Pure-ASGI middleware (no BaseHTTPMiddleware: it buffers and breaks disconnects)."""
