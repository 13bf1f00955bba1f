"""Tool definitions in a canonical order: the order of the list does not change the key.

The list is sorted by (type, function name, canonical JSON); each tool is forwarded as
the client wrote it. Its key order is part of the prompt (a chat template renders tools
as JSON) and the order of `parameters.properties` steers the order in which the model
writes arguments, so it is never changed. The prefix KEY uses the canonical JSON
(keys sorted), so the same tools in any key order share a key.

Each tool is encoded once: orjson with sorted keys (proxy/prompt/exact_json.py), in one
call that holds the GIL. The same bytes give the sort key, tell whether anything
changed, and make the key's JSON. Why: docs/decisions/0021-bounded-work-per-request.md.
"""

from __future__ import annotations

from typing import Any

from proxy.prompt.exact_json import dumps


def canonical_tools(tools: Any, sort: bool) -> tuple[Any, str, list[str]]:
    """(the tools, canonical: `tools` itself when nothing changes; their canonical JSON
    for the key, "" when there are none; trace)."""
    if not sort or not isinstance(tools, list):
        return tools, tools_json(tools), []
    encoded = [canonical_json(tool) for tool in tools]
    order = sorted(range(len(tools)), key=lambda i: (*_names(tools[i]), encoded[i]))
    joined = "[" + ",".join(encoded[i] for i in order) + "]" if tools else ""
    if order == list(range(len(tools))):
        return tools, joined, []
    return [tools[i] for i in order], joined, ["canonical: tools sorted (list order)"]


def tools_json(tools: Any) -> str:
    """The canonical JSON of the tools ("" when there are none), for the prefix key."""
    if not tools:
        return ""
    return canonical_json(tools)


def canonical_json(value: Any) -> str:
    """Compact JSON, keys sorted, non-ASCII as is."""
    return dumps(value, sort_keys=True).decode()


def _names(tool: Any) -> tuple[str, str]:
    tool_ = tool if isinstance(tool, dict) else {}
    function = tool_.get("function") if isinstance(tool_.get("function"), dict) else {}
    return str(tool_.get("type", "")), str(function.get("name", ""))
