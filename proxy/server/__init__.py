"""The server: the ASGI app, the data plane it routes to, the control routes, the OpenAPI
description and the uvicorn workers (`ragtrim serve`).

Owns: `create_app` (the middleware stack in one line, app.py), the exact-match data plane
(dataplane.py), the control routes (control_routes.py), openapi.py, workers.py and the
metrics middleware. May import every package below it and the composition root
(proxy/components.py); nothing of ragtrim imports it but the CLI.
"""
