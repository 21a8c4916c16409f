#!/usr/bin/env bash
# Builds the GEMV xclbins of xdna's kernel slots on a machine with mlir-aie and Peano
# (llvm-aie) installed, at the release and with the aiecc flags kernels/README.md pins:
#
#   MLIR_AIE_DIR=/path/to/mlir_aie PEANO_INSTALL_DIR=/path/to/llvm-aie bash kernels/build.sh [SLOT...]
#
# With no SLOT, every slot of both targets (`xdnapack kernels list`); start with the
# bring-up slot, xdna1-q8_0-k128-bringup or xdna2-q8_0-k128-bringup (kernels/README.md).
# For each slot it
#   1. compiles the slot's kernel object, kernels/<target>/gemv.cc, with Peano for the
#      target's cores (the format and K-tile of `xdnapack kernels list`; entry.inc takes
#      them as XDNA_FMT and K_TILE), and checks it defines the functions the design calls;
#   2. writes the slot's physical design as MLIR: xdnapack kernels mlir (the same Go
#      description the emulator runs and the host's streams follow);
#   3. runs aiecc on it (Peano, no objectFifo lowering: the MLIR is physical already);
#   4. copies the xclbin to kernels/<target>/gemv_<slot>.xclbin (the catalog's path).
# There is no instruction stream to build: the host writes each dispatch's TXN stream.
# Nothing here has run: no machine this was written on has the toolchains.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
: "${MLIR_AIE_DIR:?set MLIR_AIE_DIR to the mlir-aie install (bin/aiecc.py, include/aie_api)}"
: "${PEANO_INSTALL_DIR:?set PEANO_INSTALL_DIR to the llvm-aie (Peano) install}"
export PATH="$MLIR_AIE_DIR/bin:$PATH"
export PYTHONPATH="$MLIR_AIE_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
build="${BUILD_DIR:-$here/build}"        # work directories, one per slot
xclbins="${XCLBIN_DIR:-$here}"            # <target>/gemv_<slot>.xclbin land here
mkdir -p "$build"
xdnapack="${XDNAPACK:-}"
if [ -z "$xdnapack" ]; then
  xdnapack="$build/xdnapack"
  (cd "$root" && go build -o "$xdnapack" ./cmd/xdnapack)
fi
# ggml type ids, the kernels' XDNA_FMT.
declare -A ggml=([Q4_0]=2 [Q5_0]=6 [Q8_0]=8 [Q4_K]=12 [Q5_K]=13 [Q6_K]=14)
built=0

for target in xdna1 xdna2; do
  case "$target" in
  xdna1) triple=aie2-none-unknown-elf ;;
  xdna2) triple=aie2p-none-unknown-elf ;;
  esac
  while IFS=$'\t' read -r slot tgt format ktile rows columns cores; do
    case "$slot" in '#'* | '') continue ;; esac
    if [ $# -gt 0 ] && [[ " $* " != *" $slot "* ]]; then continue; fi
    dir="$build/$slot"
    out="$xclbins/$target/gemv_$(echo "${slot#"$target"-}" | tr '-' '_').xclbin"
    mkdir -p "$dir"
    echo "== $slot: $format K-tile $ktile, $rows rows a piece, $columns column(s) x $cores core(s)"
    # 1. The kernel object every core links.
    "$PEANO_INSTALL_DIR/bin/clang++" -O2 -std=c++20 --target="$triple" -DNDEBUG \
      -I "$MLIR_AIE_DIR/include" \
      -DXDNA_FMT="${ggml[$format]}" -DK_TILE="$ktile" \
      -c "$here/$tgt/gemv.cc" -o "$dir/gemv.o"
    for fn in xdna_gemv_init xdna_gemv_acc xdna_gemv_out; do
      if ! "$PEANO_INSTALL_DIR/bin/llvm-nm" --defined-only "$dir/gemv.o" | grep -qw "$fn"; then
        echo "build.sh: $slot: $dir/gemv.o does not define $fn, which the design's cores call" \
          "(runtime/npu/gemv documents the functions; kernels/common/entry.inc must define them)" >&2
        exit 1
      fi
    done
    # 2. The physical design.
    "$xdnapack" kernels mlir --target "$target" --slot "$slot" --object gemv.o -o "$dir/aie.mlir"
    # 3. aiecc, with the flags kernels/README.md pins.
    (cd "$dir" && aiecc.py --no-aiesim --no-xchesscc --no-xbridge --peano "$PEANO_INSTALL_DIR" --no-compile-host --aie-generate-xclbin --xclbin-name=final.xclbin --xclbin-kernel-name=MLIR_AIE aie.mlir)
    # 4. Where the catalog (manifest.toml) looks for it.
    mkdir -p "$(dirname "$out")"
    cp "$dir/final.xclbin" "$out"
    echo "   $out"
    # The core's stack frame must fit the design's stack (kernels/README.md, "Checking").
    "$PEANO_INSTALL_DIR/bin/llvm-objdump" -d "$dir/gemv.o" | grep -m3 'paddxm\|padda.*sp' || true
    built=$((built + 1))
  done < <("$xdnapack" kernels list --target "$target")
done
if [ "$built" -eq 0 ]; then
  echo "build.sh: no slot named ${*:-}; \`$xdnapack kernels list --target xdna1\` (or xdna2) names them" >&2
  exit 1
fi
