"""`Section`: the base of every settings group.

pydantic ignores unknown keys by default, so `RAGTRIM_TIMEOUTS__CONECT=1` or a YAML
`health: {intervall: 1}` would start ragtrim with the default and no word. Every group
forbids them instead: a typo stops the start, naming the key (removed and renamed
keys are refused earlier, with their replacement: proxy/config/removed.py).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
