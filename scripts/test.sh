#!/usr/bin/env bash
# The whole test suite: vet, unit tests, then every fuzz target for a bounded count.
# Needs ../shared/fixtures beside the checkout (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-2000x}"

echo "== go vet"
go vet ./...
go vet -tags xrt ./...
go vet -tags sim ./runtime/npu/sim ./cmd/xdnarun

echo "== go test"
go test -count=1 -timeout 20m ./...
echo "== go test -tags noasm (the pure-Go kernels under the goldens)"
go test -count=1 -tags noasm ./runtime/cpu ./runtime/engine ./planar
echo "== go test -tags sim (the AIE kernel sources compiled for this machine, under the goldens)"
if command -v g++ >/dev/null 2>&1; then
  go test -count=1 -tags sim ./runtime/npu/sim
  go test -count=1 -tags sim ./cmd/xdnarun -run 'TestSimDevice|TestGoldens//sim'
elif [ "${CI:-}" = true ]; then
  echo "no g++ in CI: .ci/run installs it" >&2; exit 1
else
  echo "skipped: no g++ on this machine (the sim tests need a C++ compiler)"
fi

echo "== fuzz ($FUZZTIME each)"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "-- $pkg $target"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tail -n 3
  done
done
echo "== all tests passed"
