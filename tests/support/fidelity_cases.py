"""The documents of issue 33's fidelity test, shared by the compressor-level test
(tests/unit/compressors/test_fidelity.py) and the end-to-end one
(tests/unit/proxy/server/test_context_fidelity.py).

Each case names a needle that must survive compression, and `check_case` also asserts
that structure stays whole: a table row is never cut (and a kept row keeps its header
and separator rows), every JSON value in the output parses, and a label line stays with
its value. No document holds a blank line (the LangChain template splits on them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

CODE = "7319"


@dataclass(frozen=True)
class Case:
    documents: tuple[str, ...]
    question: str
    needle: str | None  # None: the case checks structure only
    labels: tuple[tuple[str, str], ...] = field(default=())  # (label line, value line)


def _english(topic: str, n: int) -> str:
    facts = ("was founded in a river valley", "grew quickly after the railway came",
             "hosts a large annual music festival", "is known for its old stone bridges",
             "has a museum of maritime history", "exports timber and dried fruit",
             "elects its council every four years", "lies two hours from the coast")  # fmt: skip
    return " ".join(f"The town of {topic}{i} {facts[i % len(facts)]}." for i in range(n))


def _spaced(sentences: tuple[str, ...], needle: str, n: int = 24, sep: str = " ") -> str:
    """`n` filler sentences of one script with the needle in the middle."""
    out = [sentences[i % len(sentences)] for i in range(n)]
    out.insert(n // 2, needle)
    return sep.join(out)


THAI = ("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "แม่น้ำเจ้าพระยาไหลผ่านใจกลางเมือง",
        "ตลาดน้ำเปิดทุกวันตั้งแต่เช้าตรู่", "อาหารไทยมีรสชาติเผ็ดและหวาน",
        "รถไฟฟ้าวิ่งทุกห้านาที", "ฤดูฝนเริ่มในเดือนพฤษภาคม")  # fmt: skip
THAI_NEEDLE = f"รหัสผ่านของห้องนิรภัยคือ{CODE}"
LAO = ("ວຽງຈັນແມ່ນນະຄອນຫຼວງຂອງລາວ", "ແມ່ນ້ຳຂອງໄຫຼຜ່ານເມືອງ", "ຕະຫຼາດເຊົ້າເປີດທຸກມື້")
KHMER = ("ភ្នំពេញជារាជធានីនៃកម្ពុជា។", "ទន្លេមេគង្គហូរកាត់ទីក្រុង។", "ផ្សារបើករៀងរាល់ថ្ងៃ។")
MYANMAR = ("ရန်ကုန်မြို့သည်ကြီးမားသည်။", "ဧရာဝတီမြစ်သည်ရှည်လျားသည်။", "ဈေးသည်နေ့တိုင်းဖွင့်သည်။")
EMOJI = ("🍕🍔🌮🍟", "🚀🌕✨⭐", "🎉🎈🎂🥳", "🐶🐱🐭🐹", "⚽🏀🏈⚾", "🌧️☔🌈☀️")
EMOJI_NEEDLE = f"🔑🐉 {CODE} 🔐"

TABLE = "\n".join([
    "| Name | Role | Notes |",
    "|------|------|-------|",
    "| Alice | Engineer | Joined in 2019. Leads the storage team. Based in Oslo. |",
    "| Bob | Designer | Joined in 2021. Works on the mobile app. Based in Lima. |",
    f"| Carol | Manager | Joined in 2015. Holds the vault code {CODE}. Based in Rome. |",
    "| Dave | Analyst | Joined in 2022. Builds the sales reports. Based in Pune. |",
    "| Erin | Engineer | Joined in 2018. Runs the build farm. Based in Kyiv. |",
])  # fmt: skip
HTML_TABLE = "\n".join([
    "<table>",
    "<tr><th>Name</th><th>Notes</th></tr>",
    "<tr><td>Alice</td><td>Joined in 2019. Leads the storage team.</td></tr>",
    f"<tr><td>Carol</td><td>Joined in 2015. Holds the vault code {CODE}.</td></tr>",
    "<tr><td>Dave</td><td>Joined in 2022. Builds the sales reports.</td></tr>",
    "</table>",
])  # fmt: skip
RECORDS = [{"name": f"box-{i}", "owner": f"Team number {i}. Second shift."} for i in range(8)]
RECORDS[5] = {"name": "vault", "owner": "Carol. Security office.", "code": CODE}
JSON_ARRAY = json.dumps(RECORDS, indent=2)
JSON_STRINGS = json.dumps([f"Note {i}. Filed by the night desk." for i in range(10)]
                          + [f"The vault code is {CODE}. Keep it safe."], indent=2)  # fmt: skip
BULLETS = "\n".join(
    line
    for i in range(6)
    for line in (f"- Owner of service {i}:", f"  Platform crew {i} runs the Kafka cluster {i}.")
)
MIXED = f"{_english('Alder', 10)} {_spaced(THAI, THAI_NEEDLE, 8)} {_english('Birch', 10)}"

CASES: dict[str, Case] = {
    "thai": Case((_english("Cedar", 4), _spaced(THAI, THAI_NEEDLE)), "รหัสผ่านห้องนิรภัย", CODE),
    "lao": Case((_spaced(LAO, f"ລະຫັດຜ່ານແມ່ນ{CODE}", 200),), "ລະຫັດຜ່ານ", CODE),
    "khmer": Case((_spaced(KHMER, f"លេខសម្ងាត់គឺ{CODE}។", 200),), "លេខសម្ងាត់", CODE),
    "myanmar": Case((_spaced(MYANMAR, f"လျှို့ဝှက်နံပါတ်{CODE}။"),), "နံပါတ်", CODE),
    "emoji": Case((_spaced(EMOJI, EMOJI_NEEDLE, sep="\n"),), "🔑🐉?", CODE),
    "thai_inside_english": Case((MIXED,), "รหัสผ่านห้องนิรภัย", CODE),
    "markdown_table": Case((_english("Dune", 4), TABLE), "Where is Bob based?", CODE),
    "html_table": Case((_english("Elm", 4), HTML_TABLE), "What does Dave build?", CODE),
    "json_array": Case((_english("Fir", 4), JSON_ARRAY), "Who owns box-3?", CODE),
    "json_strings": Case((JSON_STRINGS,), "What did the night desk file?", CODE),
    "label_and_value": Case(
        (_english("Gorse", 3), BULLETS),
        "Which platform crew runs the Kafka cluster?",
        None,
        tuple(zip(BULLETS.split("\n")[::2], BULLETS.split("\n")[1::2], strict=True)),
    ),
}

# the quoted-system-prompt case: the documents are quoted before the context
QUOTED_DOCS = (
    _english("Hazel", 5) + f" The archive door code is {CODE}.",
    _english("Ivy", 6),
)
QUOTED = f"You are a careful assistant. Earlier reports said: {QUOTED_DOCS[0]} Be brief."
QUOTED_QUESTION = "What is the archive door code?"


def check_case(case: Case, out: str) -> None:
    """The needle is there, and every structure in `out` is whole (module docstring)."""
    if case.needle is not None:
        assert case.needle in out, out
    for doc in case.documents:
        _check_tables(doc, out)
    for piece in out.split("\n\n"):
        if piece.lstrip().startswith(("[", "{")):
            json.loads(piece)  # raises on a cut JSON value
    for label, value in case.labels:
        if value.strip() in out:
            assert f"{label}\n{value}" in out, (label, value, out)


def _check_tables(doc: str, out: str) -> None:
    rows = [line for line in doc.split("\n") if line.startswith(("|", "<tr>"))]
    if not rows:
        return
    whole = set(doc.split("\n"))
    kept = [line for line in out.split("\n") if line.startswith(("|", "<tr>", "<t"))]
    for line in kept:
        assert line in whole, f"a table row was cut: {line!r}"
    if kept:
        assert rows[0] in kept, "a kept row lost its header"
        if rows[1].startswith("|-"):
            assert rows[1] in kept, "a kept row lost its separator"
