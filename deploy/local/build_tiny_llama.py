"""Build a tiny random Llama (hidden 256, 4 layers, vocab 8k) that vLLM can serve on CPU.

The tokenizer is a byte-level BPE trained here on the docstrings of Python's standard
library, with ChatML special tokens and a ChatML chat template in tokenizer_config.json.
Weights are random (torch seed), saved as safetensors fp32. The output is the same for the
same seed, Python and library versions. Nothing is downloaded.

    python -m deploy.local.build_tiny_llama --out .models/tiny-llama [--seed 0]

Runs with the ragtrim venv (.venv) or the vLLM venv (.venv-vllm); skips when DIR is done.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from deploy.local.corpus import stdlib_corpus
from deploy.local.publish import building

VOCAB_SIZE = 8192
BOS, EOS, PAD = "<|endoftext|>", "<|im_end|>", "<|endoftext|>"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
REQUIRED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)


def is_complete(out: Path) -> bool:
    return all((out / name).is_file() for name in REQUIRED_FILES)


def train_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def tokenizer_config(tok) -> dict:
    added = {
        str(tok.token_to_id(t)): {
            "content": t, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True,
        }
        for t in SPECIAL_TOKENS
    }  # fmt: skip
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "chat_template": CHATML_TEMPLATE,
    }


def save_tokenizer(tok, out: Path) -> dict[str, int]:
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(tok), indent=2))
    special_map = {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}
    (out / "special_tokens_map.json").write_text(json.dumps(special_map, indent=2))
    return {name: tok.token_to_id(t) for name, t in special_map.items()}


def build_model(ids: dict[str, int], seed: int):
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=ids["bos_token"],
        eos_token_id=ids["eos_token"],
        pad_token_id=ids["pad_token"],
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=ids["bos_token"],
        eos_token_id=ids["eos_token"],
        pad_token_id=ids["pad_token"],
    )
    return model


def build(out: Path, seed: int) -> None:
    with building(out) as tmp:
        tok = train_tokenizer(stdlib_corpus())
        ids = save_tokenizer(tok, tmp)
        model = build_model(ids, seed)
        model.save_pretrained(tmp, safe_serialization=True)
        (tmp / "ragtrim_build.json").write_text(json.dumps({"builder": "tiny-llama", "seed": seed}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="output model directory")
    parser.add_argument("--seed", type=int, default=0, help="torch seed for the weights")
    parser.add_argument("--force", action="store_true", help="rebuild even if complete")
    args = parser.parse_args(argv)
    if is_complete(args.out) and not args.force:
        print(f"[tiny-llama] {args.out} already built")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.monotonic()
    build(args.out, args.seed)
    print(f"[tiny-llama] built {args.out} in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
