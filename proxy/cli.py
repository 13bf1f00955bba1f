"""`ragtrim serve`: every Settings field is a flag, with its description as help.

Flags are generated from the Settings model so the CLI cannot drift from it:
nested fields become `--timeouts-connect`, lists take comma-separated values.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import yaml
from pydantic import BaseModel

from proxy.settings import Settings, load_settings


def _fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple]:
    for name, info in model.model_fields.items():
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _fields(ann, (*prefix, name))
        else:
            default = info.get_default(call_default_factory=True)
            yield (*prefix, name), info.description or "", default


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragtrim",
        description="ragtrim: an OpenAI-compatible proxy in front of vLLM that compresses "
        "retrieved RAG context and routes each prompt prefix to the replica that caches it.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="run the proxy",
        description="Run the proxy. Precedence: flags > RAGTRIM_* env > --config YAML > "
        "defaults. Nested env names use '__' (RAGTRIM_TIMEOUTS__CONNECT).",
    )
    serve.add_argument("--config", help="YAML file with settings (same names as below)")
    for path, description, default in _fields(Settings):
        flag = "--" + "-".join(path).replace("_", "-")
        env = "RAGTRIM_" + "__".join(path).upper()
        shown = ",".join(default) if isinstance(default, list) else default
        serve.add_argument(
            flag,
            dest="::".join(path),
            default=None,
            metavar=type(shown).__name__.upper(),
            help=f"{description} Default: {shown!r}. Env: {env}.",
        )
    return parser


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in vars(args).items():
        if value is None or key in ("command", "config"):
            continue
        if isinstance(value, str) and value[:1] in "{[":
            value = yaml.safe_load(value)  # dict and list options take JSON/YAML
        node = out
        *parents, leaf = key.split("::")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = load_settings(args.config, overrides_from(args))
    return serve(settings)


def serve(settings: Settings) -> int:
    import logging

    from proxy.workers import Supervisor, run_one

    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if settings.workers > 1:
        return Supervisor(settings).run()
    run_one(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
