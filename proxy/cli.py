"""`ragtrim serve`: every Settings field is a flag, with its description as help.

Flags are generated from the Settings model so the CLI cannot drift from it:
nested fields become `--timeouts-connect`. A list flag (LIST) takes a JSON list, or a
plain string: comma-separated for the lists that say so (backends, routing filters
and scorers split strings themselves), else the list's one item, so that
`--compression-patterns '(?P<context>.+)'` works although a regex may hold commas
(issue 23: the help named STR and a string was refused). Invalid settings end the
command with their errors, not a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from proxy.config.removed import REMOVED
from proxy.settings import Settings, load_settings


def _fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple]:
    """(path, description, default, kind): kind "list" (a list the field cannot build
    from a string), "split" (a list whose own validator splits a string), or ""."""
    for name, info in model.model_fields.items():
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _fields(ann, (*prefix, name))
        else:
            default = info.get_default(call_default_factory=True)
            kind = ""
            if get_origin(ann) is list or ann is list:
                kind = "split" if _splits_strings(model, name) else "list"
            yield (*prefix, name), info.description or "", default, kind


def _splits_strings(model: type[BaseModel], name: str) -> bool:
    validators = model.__pydantic_decorators__.field_validators.values()
    return any(name in v.info.fields and v.info.mode == "before" for v in validators)


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
    for path, description, default, kind in _fields(Settings):
        flag = "--" + "-".join(path).replace("_", "-")
        env = "RAGTRIM_" + "__".join(path).upper()
        shown = json.dumps(default, default=str) if kind else default
        how = {"list": " A JSON list, or one item.", "split": " A JSON list or comma-separated."}
        serve.add_argument(
            flag,
            dest="::".join(path),
            default=None,
            metavar="LIST" if kind else type(shown).__name__.upper(),
            help=f"{description}{how.get(kind, '')} Default: {shown!s}. Env: {env}.",
        )
    _removed_flags(serve)
    return parser


def _removed_flags(serve: argparse.ArgumentParser) -> None:
    """Removed settings stay accepted as hidden flags so that validation refuses them
    naming the replacement (proxy/config/removed.py), not argparse's bare "unrecognized"."""
    for section, keys in REMOVED.items():
        for key in keys:
            flag = f"--{section}-{key}".replace("_", "-")
            serve.add_argument(flag, dest=f"{section}::{key}", help=argparse.SUPPRESS)


def _one_item_lists() -> frozenset[str]:
    return frozenset("::".join(path) for path, _, _, kind in _fields(Settings) if kind == "list")


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    one_item = _one_item_lists()
    for key, value in vars(args).items():
        if value is None or key in ("command", "config"):
            continue
        if isinstance(value, str) and value[:1] in "{[":
            value = yaml.safe_load(value)  # dict and list options take JSON/YAML
        elif key in one_item:
            value = [value]  # a plain string is the list's one item (a regex may hold ",")
        node = out
        *parents, leaf = key.split("::")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(args.config, overrides_from(args))
    except ValidationError as exc:  # e.g. tenancy without a salt_secret: say so, plainly
        print(f"ragtrim: invalid settings, not starting.\n{exc}", file=sys.stderr)
        return 2
    return serve(settings)


def serve(settings: Settings) -> int:
    import logging

    from proxy.server.workers import Supervisor, run_one

    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if settings.workers > 1:
        return Supervisor(settings).run()
    run_one(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
