"""Prompt segmentation: find the context documents and the question, with zero
client change, and put compressed documents back without touching another byte.

    Segmenter(patterns).chat(messages, body_field=None) -> Segmentation | None
    Segmenter(patterns).prompt(prompt, body_field=None) -> Segmentation | None
    apply_chat(messages, seg, new_texts) -> list[dict]   (a new list; changed messages copied)
    apply_prompt(prompt, seg, new_texts) -> str

The package, one concept a file:
  model.py        Slot, Segmentation (documents, question, static_end, markers)
  messages.py     reading and writing the text of OpenAI chat messages
  segmenter.py    the Segmenter: THE order of the recognisers, built once
  body_field.py   recogniser 1: the request's `ragtrim` field
  tags.py         recogniser 2: <ragtrim:doc> tags (their markers go on apply)
  framework.py    recogniser 3: a framework's template (texts: frameworks.toml,
                  loaded by frameworks.py; matched word by word: words.py, split.py)
  patterns.py     recogniser 4: operator regexes
  explicit.py     static_end and question rules shared by recognisers 1, 2 and 4
  splice.py       the splice back (apply_chat, apply_prompt)
  documents.py    vLLM's chat `documents` field: its entries are documents (with_documents,
                  apply_documents), added to what the recognisers found

Messages are OpenAI chat messages; a message is searched when its content is a string
or a list with exactly one text part, and the explicit recognisers (body field, tags,
patterns) search only messages whose role carries context, never an assistant turn
(messages.CONTEXT_ROLES) (`Slot.message` is the message index, offsets
index that text). `static_end` is where the static instruction ends: for a template,
where its first placeholder starts; for the explicit recognisers, the first document
(or the question, if located and earlier). Documents are split on blank lines and
stripped; their order is kept.

Everything here runs on the request path, so it runs in linear time on any input:
templates match word by word (no regex backtracking), tags are found with str.find,
and apply_* splices in one pass. Only operator-supplied `patterns` can be slow.
This package imports nothing from proxy/.
"""

from proxy.prompt.segment.documents import apply_documents, with_documents
from proxy.prompt.segment.messages import SYSTEM_ROLES, message_text, role, with_text
from proxy.prompt.segment.model import Position, Segmentation, Slot
from proxy.prompt.segment.segmenter import Recogniser, Segmenter
from proxy.prompt.segment.splice import apply_chat, apply_prompt

__all__ = [
    "SYSTEM_ROLES",
    "Position",
    "Recogniser",
    "Segmentation",
    "Segmenter",
    "Slot",
    "apply_chat",
    "apply_documents",
    "apply_prompt",
    "message_text",
    "role",
    "with_documents",
    "with_text",
]
