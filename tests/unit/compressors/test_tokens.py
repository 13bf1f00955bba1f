from compressors.tokens import (
    ApproxTokenCounter,
    HFTokenCounter,
    counter_name,
    make_token_counter,
)


def test_approx_counts_words_numbers_and_punctuation():
    count = ApproxTokenCounter()
    assert count("") == 0
    assert count("Hello, world!") == 4
    assert count("internationalization") > 1  # long words are several tokens
    assert count("1234567") == 3  # digits in groups of three
    assert count("a " * 100) == 100


def test_hf_counter_ignores_folder_padding_and_special_tokens(minilm_path):
    count = HFTokenCounter(minilm_path)
    assert count("hello world") == 2  # no [CLS]/[SEP], no padding to 128
    assert count("hello world " * 300) == 600  # no truncation either
    assert count.name == f"hf:{minilm_path.name}"


def test_names_and_factory(minilm_path):
    assert counter_name(ApproxTokenCounter()) == "approx-v2"
    assert counter_name(len) == "len"
    assert isinstance(make_token_counter(None), ApproxTokenCounter)
    assert isinstance(make_token_counter(minilm_path), HFTokenCounter)


def test_count_spans_in_one_pass(minilm_path):
    from compressors import ApproxTokenCounter, HFTokenCounter, count_spans, split_sentences

    text = "Paris is big. It has 2,100,000 people!\n\nThe Seine runs through it."
    spans = split_sentences(text)
    hf = HFTokenCounter(minilm_path)
    total, each = count_spans(hf, text, spans)
    assert total == hf(text) and each == [hf(text[s:e]) for s, e in spans]
    approx = ApproxTokenCounter()
    assert count_spans(approx, text, spans) == (approx(text), [approx(text[s:e]) for s, e in spans])
    assert count_spans(hf, "", []) == (0, [])


def test_count_spans_byte_level_bpe(tiny_causal_lm):
    """Byte-level BPE glues the space to the next word (" It"): such a token belongs to
    the sentence it overlaps; whitespace-only tokens belong to none."""
    from compressors import HFTokenCounter, count_spans, split_sentences

    text = "Paris is big. It has many people.\n\nThe river runs through it."
    spans = split_sentences(text)
    hf = HFTokenCounter(tiny_causal_lm)
    total, each = count_spans(hf, text, spans)
    assert total == hf(text) and sum(each) <= total and all(n > 0 for n in each)
    alone = [hf(text[s:e]) for s, e in spans]
    assert all(abs(a - b) <= 2 for a, b in zip(each, alone, strict=True))


def test_approx_counts_scripts_without_spaces_per_character():
    """v1 counted 1,440 Chinese characters as 240 tokens (one 'word' per run)."""
    count = ApproxTokenCounter()
    assert count("中" * 1440) == 1440
    assert count("東京は2024年") == 4 + 1 + 1
    assert count("ภาษาไทย") == 7
    assert count("Привет мир") == 3 + 2  # other scripts: 2 letters a token
    assert count("hello world, naïve café") == 5  # Latin words as before
