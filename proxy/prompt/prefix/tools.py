"""Tool definitions in a canonical form: declaration order does not change the bytes.

Every tool's dict keys are sorted recursively (the proxy re-serialises with json.dumps,
which keeps insertion order) and the list is sorted by (type, function name). Lists
inside a tool (e.g. "required") keep their order: their order can mean something.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_tools(tools: Any, sort: bool) -> tuple[Any, list[str]]:
    """(the tools, canonical; `tools` itself when nothing changes, trace)."""
    if not sort or not isinstance(tools, list):
        return tools, []
    new = sorted((_sorted_keys(tool) for tool in tools), key=_tool_sort_key)
    if json.dumps(new) == json.dumps(tools):
        return tools, []
    return new, ["canonical: tools sorted (keys and order)"]


def tools_json(tools: Any) -> str:
    """The canonical JSON of the tools ("" when there are none), for the prefix key."""
    if not tools:
        return ""
    return json.dumps(tools, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def _tool_sort_key(tool: Any) -> tuple[str, str, str]:
    tool_ = tool if isinstance(tool, dict) else {}
    function = tool_.get("function") if isinstance(tool_.get("function"), dict) else {}
    return (
        str(tool_.get("type", "")),
        str(function.get("name", "")),
        json.dumps(tool, sort_keys=True),
    )
