#!/usr/bin/env bash
# Builds the GEMV xclbins of every slot of manifest.toml, on a machine with mlir-aie
# (IRON, aiecc.py) and Peano (llvm-aie) installed (kernels/README.md):
#
#   MLIR_AIE_DIR=/path/to/mlir-aie/install PEANO_INSTALL_DIR=/path/to/llvm-aie bash kernels/build.sh [SLOT...]
#
# For each slot of kernels/l1.tsv (the catalog's slots with the rows per weight
# object their L1 budget allows) it compiles the kernel (kernels/<target>/gemv.cc)
# for the target's core, generates the design's MLIR (kernels/<target>/gemv.py), and
# runs aiecc.py to produce the xclbin and the instruction template at the paths the
# catalog names: kernels/<target>/gemv_<format>_k<T>.xclbin and .insts.bin.
# Nothing here has been run: no machine this was written on has the toolchains.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${MLIR_AIE_DIR:?set MLIR_AIE_DIR to the mlir-aie install (python/, include/aie_api)}"
: "${PEANO_INSTALL_DIR:?set PEANO_INSTALL_DIR to the llvm-aie (Peano) install}"
export PYTHONPATH="$MLIR_AIE_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
build="${BUILD_DIR:-$here/build}"
declare -A ggml=([Q4_0]=2 [Q5_0]=6 [Q8_0]=8 [Q4_K]=12 [Q5_K]=13 [Q6_K]=14)
core_rows=128 # runtime/npu/params.go RowChunk (512) / 4 cores

grep -v '^#' "$here/l1.tsv" | while IFS=$'\t' read -r slot target format ktile lanes rows _; do
  if [ $# -gt 0 ] && [[ " $* " != *" $slot "* ]]; then continue; fi
  case "$target" in
  xdna1) triple=aie2-none-unknown-elf ;;
  xdna2) triple=aie2p-none-unknown-elf ;;
  *) echo "build.sh: $slot: unknown target $target" >&2; exit 1 ;;
  esac
  lower="$(echo "$format" | tr 'A-Z' 'a-z')"
  out="$here/$target/gemv_${lower}_k${ktile}"
  dir="$build/$slot"
  mkdir -p "$dir"
  echo "== $slot: $format K-tile $ktile, $rows rows per weight object, $lanes lanes"
  "$PEANO_INSTALL_DIR/bin/clang++" -O2 -std=c++20 --target="$triple" -DNDEBUG \
    -I "$MLIR_AIE_DIR/include" \
    -DXDNA_FMT="${ggml[$format]}" -DK_TILE="$ktile" -DPIECE_ROWS="$rows" -DCORE_ROWS="$core_rows" \
    -c "$here/$target/gemv.cc" -o "$dir/gemv.o"
  python3 "$here/$target/gemv.py" --format "$format" --k-tile "$ktile" --rows "$rows" > "$dir/aie.mlir"
  (cd "$dir" && aiecc.py --no-aiesim --no-xchesscc --no-xbridge --peano "$PEANO_INSTALL_DIR" \
    --aie-generate-xclbin --xclbin-name=final.xclbin \
    --aie-generate-npu-insts --npu-insts-name=insts.bin aie.mlir)
  cp "$dir/final.xclbin" "$out.xclbin"
  cp "$dir/insts.bin" "$out.insts.bin"
  # The core's stack frame must fit the 1 KiB stack (README, "Checks").
  "$PEANO_INSTALL_DIR/bin/llvm-objdump" -d "$dir/gemv.o" | grep -m3 'paddxm\|padda.*sp' || true
done
