#!/usr/bin/env bash
# The main job on an embedded default: build both programs, pack a small model,
# verify it bit for bit against its GGUF, and generate text from it on the CPU.
# Uses ../shared/fixtures/models/stories260K-q4_0.gguf when it is there, else
# a tiny random-weight model that the repository generates itself.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/ ./cmd/xdnapack ./cmd/xdnarun
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=../shared/fixtures/models/stories260K-q4_0.gguf
prompt="Once upon a time"
if [ ! -f "$model" ]; then
  echo "demo: $model not found; generating a tiny random-weight model (its text is noise)" >&2
  model="$work/tiny.gguf"
  go run ./testdata/gen -shape tiny -o "$model"
  prompt="hello"
fi
bin/xdnapack "$model" -o "$work/model.xdna" --target xdna1
bin/xdnapack verify "$work/model.xdna" --against "$model"
bin/xdnarun "$work/model.xdna" -p "$prompt" -n 48 --temp 0 --device auto
