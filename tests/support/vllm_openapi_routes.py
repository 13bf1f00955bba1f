"""Every HTTP route vLLM's OpenAI server can serve, as the committed fixture
tests/fixtures/vllm_openapi_routes.json (issue 31: a route vLLM serves must never be a
silent 404 in ragtrim).

vLLM registers its routers conditionally (the model's tasks, --enable-scale-out,
--enable-tokenizer-info-endpoint, VLLM_SERVER_DEV_MODE, ...), so one running server's
/openapi.json shows only part of them. The fixture is the union: vLLM's own
`register_api_routers` on a bare FastAPI app with every task and every switch on, plus
the routers it adds only with a model config (pooling) or a profiler, plus the Cohere
chat routes, read from their source when the optional `cohere` SDK is absent. Each
route says whether vLLM's request model takes `cache_salt` (None: the handler reads the
raw request, no declared model).

Regenerate with the vLLM venv (`make setup-vllm`), from the repository root:

    .venv-vllm/bin/python tests/support/vllm_openapi_routes.py \
        > tests/fixtures/vllm_openapi_routes.json

`load()` reads the fixture with the standard library only (the tests' side).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_openapi_routes.json"
WEBSOCKET = "WEBSOCKET"


def load() -> dict:
    return json.loads(FIXTURE.read_text())


def template(path: str) -> str:
    """vLLM's `{response_id}` as ragtrim's table writes it: `{id}`."""
    return re.sub(r"\{[^}/]+\}", "{id}", path)


def _salt_of(route) -> bool | None:
    from typing import get_args

    import pydantic

    found: dict[str, bool] = {}
    for param in route.dependant.body_params:
        ann = param.field_info.annotation
        for outer in (ann, *get_args(ann)):
            for inner in (outer, *get_args(outer)):
                if isinstance(inner, type) and issubclass(inner, pydantic.BaseModel):
                    found[inner.__name__] = "cache_salt" in inner.model_fields
    return any(found.values()) if found else None


def _cohere_paths() -> list[str]:
    """The Cohere chat routes without the SDK: their paths, read from the source."""
    import vllm.entrypoints.cohere as pkg

    text = (Path(pkg.__file__).parent / "api_router.py").read_text()
    return re.findall(r'@\w*router\.post\(\s*"(/[^"]+)"', text)


def generate() -> dict:
    os.environ.update(VLLM_SERVER_DEV_MODE="1", VLLM_ALLOW_RUNTIME_LORA_UPDATING="1",
                      VLLM_ENABLE_COHERE_API="1")  # fmt: skip
    from argparse import Namespace
    from typing import get_args

    import vllm
    import vllm.tasks
    from fastapi import FastAPI
    from fastapi.routing import APIRoute, APIWebSocketRoute
    from vllm.entrypoints.launchers.api_server.routers import register_api_routers
    from vllm.entrypoints.pooling.classify.api_router import router as classify
    from vllm.entrypoints.pooling.embed.api_router import router as embed
    from vllm.entrypoints.pooling.pooling.api_router import router as pooling
    from vllm.entrypoints.pooling.scoring.api_router import router as scoring
    from vllm.entrypoints.scale_out.token_in_token_out.api_router import abort_router
    from vllm.entrypoints.serve.profile.api_router import router as profile

    app = FastAPI()
    args = Namespace(enable_tokenizer_info_endpoint=True, enable_scale_out=True, tokens_only=False,
                     enable_fault_tolerance=True, profiler_config=None)  # fmt: skip
    app.state.args = args
    register_api_routers(args, app, get_args(vllm.tasks.SupportedTask), None)
    for router in (pooling, classify, embed, scoring, profile, abort_router):
        app.include_router(router)  # registered only with a pooling model config / profiler
    routes: dict[tuple[str, str], bool | None] = {}
    for route in app.routes:
        if isinstance(route, APIRoute) and route.include_in_schema:
            for method in route.methods:
                routes[(method, route.path)] = _salt_of(route)
        elif isinstance(route, APIWebSocketRoute):
            routes[(WEBSOCKET, route.path)] = None
    if not any(path.startswith("/cohere/") for _, path in routes):
        for path in _cohere_paths():
            routes[("POST", path)] = None
    return {
        "vllm": vllm.__version__,
        "generated_by": "tests/support/vllm_openapi_routes.py",
        "routes": [{"method": m, "path": p, "cache_salt": s}
                   for (m, p), s in sorted(routes.items(), key=lambda kv: (kv[0][1], kv[0][0]))],
    }  # fmt: skip


if __name__ == "__main__":
    data = generate()
    rows = ",\n".join("  " + json.dumps(r) for r in data.pop("routes"))
    head = json.dumps(data)[:-1]  # one route a line: a new vLLM route is a one-line diff
    sys.stdout.write(f'{head}, "routes": [\n{rows}\n]}}\n')
