from compressors.tokens import (
    ApproxTokenCounter,
    HFTokenCounter,
    TiktokenCounter,
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


def test_tiktoken_counter():
    assert TiktokenCounter()("hello world") == 2


def test_names_and_factory(minilm_path):
    assert counter_name(ApproxTokenCounter()) == "approx-v1"
    assert counter_name(len) == "len"
    assert isinstance(make_token_counter(None), ApproxTokenCounter)
    assert isinstance(make_token_counter(minilm_path), HFTokenCounter)
