"""The request shapes bench.path_cost times: document sets of a given size, questions.

Built from SQuAD v1.1 train (as bench.followups): a document set is consecutive usable
paragraphs of shuffled articles until the set reaches its size in tokens (the target
tokenizer's count); its questions are those paragraphs' own questions, so every one is
new to the set and answerable from it. Rendered as LangChain's stuff prompt (the
context in the system message, the question as the user turn), the shape ragtrim's
default templates recognise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from bench.lib.squad import load_squad, usable
from bench.lib.squad_render import LANGCHAIN_SYSTEM

PLAIN_TEXT = "Write one sentence about the sea. " * 4


@dataclass(frozen=True)
class DocumentSet:
    documents: tuple[str, ...]
    questions: tuple[str, ...]

    def body(self, model: str, turn: int, salt: str) -> dict:
        system = LANGCHAIN_SYSTEM.format(context="\n\n".join(self.documents))
        question = self.questions[turn % len(self.questions)]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        return {"model": model, "messages": messages, "max_tokens": 1, "cache_salt": salt}


def plain_body(model: str, salt: str) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": PLAIN_TEXT}],
            "max_tokens": 1, "cache_salt": salt}  # fmt: skip


def document_sets(sizes: list[int], count: int, count_tokens, seed: int) -> dict[int, list]:
    """`count` disjoint document sets of about `size` tokens for each size."""
    paragraphs = [p for a in load_squad("train") for p in a.paragraphs if usable(p.text)]
    random.Random(seed).shuffle(paragraphs)
    pool, out = iter(paragraphs), {}
    for size in sizes:
        out[size] = [_one_set(pool, size, count_tokens) for _ in range(count)]
    return out


def _one_set(pool, size: int, count_tokens) -> DocumentSet:
    docs, questions, tokens = [], [], 0
    while tokens < size:
        paragraph = next(pool)
        docs.append(paragraph.text)
        questions += [q for _, q, answers in paragraph.qas if answers]
        tokens += count_tokens(paragraph.text)
    return DocumentSet(tuple(docs), tuple(questions))
