"""LlamaIndex text_qa_template (chat and completion), rendered from its exact texts."""

from proxy.prompt.segment import apply_chat, apply_prompt
from tests.support.segmenting import segment_chat, segment_prompt

DOCS = (
    "Photosynthesis converts light energy into chemical energy stored in glucose. It takes "
    "place in the chloroplasts of plant cells.",
    "The light-dependent reactions happen in the thylakoid membranes and produce ATP and "
    "NADPH, releasing oxygen as a by-product.",
    "The Calvin cycle uses ATP and NADPH in the stroma to fix carbon dioxide into sugars.",
)
SHORT = (
    "Light to glucose in chloroplasts.",
    "Thylakoids: ATP, NADPH, O2.",
    "Calvin: CO2 to sugar.",
)
QUESTION = "Where does the Calvin cycle take place?"
METADATA = ("file_path: /data/bio/ch1.md", "file_path: /data/bio/ch2.md\npage_label: 4", "")

# llama_index/core/prompts/chat_prompts.py
SYSTEM = (
    "You are an expert Q&A system that is trusted around the world.\n"
    "Always answer the query using the provided context information, and not prior knowledge.\n"
    "Some rules to follow:\n"
    "1. Never directly reference the given context in your answer.\n"
    "2. Avoid statements like 'Based on the context, ...' or 'The context information ...' "
    "or anything along those lines."
)
# llama_index/core/prompts/default_prompts.py (DEFAULT_TEXT_QA_PROMPT_TMPL)
USER = (
    "Context information is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\n"
    "Query: {query_str}\n"
    "Answer: "
)
HEADER = USER[: USER.index("{context_str}")]


def node(text: str, metadata: str) -> str:
    """TextNode.get_content(MetadataMode.LLM): '{metadata_str}\\n\\n{content}'."""
    return f"{metadata}\n\n{text}" if metadata else text


def render(docs=DOCS, metadata=("", "", "")) -> str:
    context = "\n\n".join(node(t, m) for t, m in zip(docs, metadata, strict=True))
    return USER.format(context_str=context, query_str=QUESTION)


def chat(docs=DOCS, metadata=("", "", "")):
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": render(docs, metadata)},
    ]


def assert_documents(seg):
    assert seg is not None
    assert seg.template == "llamaindex_text_qa"
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == QUESTION


def test_chat():
    messages = chat()
    seg = segment_chat(messages)
    assert_documents(seg)
    assert seg.static_end == (1, len(HEADER))
    assert messages[1]["content"][: seg.static_end[1]] == HEADER
    assert apply_chat(messages, seg, DOCS) == messages
    out = apply_chat(messages, seg, SHORT)
    assert out == chat(SHORT)
    assert out[0] is messages[0]


def test_chat_node_metadata_stays_and_is_not_a_document():
    messages = chat(metadata=METADATA)
    seg = segment_chat(messages)
    assert_documents(seg)
    assert apply_chat(messages, seg, DOCS) == messages
    assert apply_chat(messages, seg, SHORT) == chat(SHORT, METADATA)


def test_chat_without_the_system_message():
    messages = chat()[1:]
    seg = segment_chat(messages)
    assert_documents(seg)
    assert seg.static_end == (0, len(HEADER))


def test_completion():
    prompt = render()
    seg = segment_prompt(prompt)
    assert_documents(seg)
    assert seg.static_end == (None, len(HEADER))
    assert apply_prompt(prompt, seg, DOCS) == prompt
    assert apply_prompt(prompt, seg, SHORT) == render(SHORT)


def test_completion_preceded_by_the_system_text():
    prefix = f"system: {SYSTEM}\nuser: "  # llama_index messages_to_prompt layout
    prompt = prefix + render(metadata=METADATA)
    seg = segment_prompt(prompt)
    assert_documents(seg)
    assert prompt[: seg.static_end[1]] == prefix + HEADER
    assert apply_prompt(prompt, seg, DOCS) == prompt
    assert apply_prompt(prompt, seg, SHORT) == prefix + render(SHORT, METADATA)


def test_completion_preceded_by_other_text_is_not_recognised():
    assert segment_prompt("You are a pirate.\n" + render()) is None
