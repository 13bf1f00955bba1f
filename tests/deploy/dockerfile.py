"""A small Dockerfile reader for the replay test: stages, ARG/ENV, marked RUN steps,
HEALTHCHECK and ENTRYPOINT. Just enough of the format (continuations, comments,
JSON exec form) for deploy/docker/Dockerfile; not a general parser."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

MARK = "# replayed"


@dataclass
class Instruction:
    keyword: str
    args: str
    marked: bool  # preceded by a "# replayed" comment


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def args(self) -> dict[str, str]:
        out = {}
        for ins in self.all("ARG"):
            name, _, default = ins.args.partition("=")
            out[name.strip()] = default.strip()
        return out

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for ins in self.all("ENV"):
            for pair in shlex.split(ins.args):
                key, _, value = pair.partition("=")
                out[key] = value
        return out

    def exec_form(self, keyword: str) -> list[str]:
        (ins,) = self.all(keyword)
        text = ins.args
        if keyword == "HEALTHCHECK":
            text = text[text.index("CMD") + 3 :]
        return json.loads(text)


def instructions(path: Path) -> list[Instruction]:
    out, marked, pending = [], False, ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and line.startswith("#"):
            marked = marked or line.startswith(MARK)
            continue
        if not line and not pending:
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = (pending + line).strip()
        pending = ""
        keyword, _, args = text.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), marked))
        marked = False
    return out


def stages(path: Path) -> list[Stage]:
    out: list[Stage] = []
    for ins in instructions(path):
        if ins.keyword == "FROM":
            match = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", ins.args, re.IGNORECASE)
            out.append(Stage(match.group(1), match.group(2) or ""))
        elif out:
            out[-1].instructions.append(ins)
    return out
