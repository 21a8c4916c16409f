# xdna GEMV dataflow design (IRON, mlir-aie's Python API), shared by
# kernels/xdna1/gemv.py (NPU1, 4 columns, AIE2) and kernels/xdna2/gemv.py (NPU2,
# 8 columns, AIE2P). One design per (format, K-tile): `make -C kernels` builds all
# the slots of manifest.toml (kernels/README.md).
#
# STATUS: written against the IRON API of mlir-aie's programming examples, never
# compiled or run (no mlir-aie/Peano toolchain or NPU on the machines this was
# written on). kernels/README.md lists what must be checked on a Ryzen AI machine
# and the open questions of the device contract.
#
# Dataflow (per column c of the design, dispatch column = partition column):
#   weights: shim (c, 0) MM2S ch 0 -> memtile (c, 1), ObjectFifo of depth 2 whose
#            object is one (row chunk, K-tile) weight object of the column (all its
#            pieces for the 4 cores, core-major) -> split at fixed offsets into 4
#            ObjectFifos of depth 2, one per core (c, 2..5), object = one piece of at
#            most ROWS rows (kernels/l1.tsv) in the core layout (gemv.hpp).
#            One contiguous run per column from the shim, the whole dispatch's
#            weights in one BD chain (strided small runs cut shim bandwidth ~5x).
#   activations: shim (0, 0) MM2S ch 1 -> memtile (0, 1) -> broadcast to every core
#            of every column: first the 64-byte header object, then per row chunk the
#            records of every K-tile (one object = one tile's records for every token).
#   outputs: each core's accumulators (one object of ROWS_CORE x tokens f32 per row
#            chunk) -> memtile (c, 1) join of the 4 cores -> shim (c, 0) S2MM ch 0.
#
# Core body (every compute tile): forever: acquire the header; per row chunk: acquire
# the accumulator object, per K-tile acquire the tile's records, per piece acquire the
# weight object and call gemv_tile(w, acts, y, piece, tokens,
# tile); release; after the chunk's last tile release the accumulators (drained).
import numpy as np

from aie.iron import Kernel, ObjectFifo, Program, Runtime, Worker
from aie.iron.controlflow import range_
from aie.iron.device import NPU1Col4, NPU2, Tile
from aie.iron.placers import SequentialPlacer

GGML = {"Q4_0": 2, "Q5_0": 6, "Q8_0": 8, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14}
BLOCK = {"Q4_0": 32, "Q5_0": 32, "Q8_0": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}
CORES = 4
ROW_CHUNK = 512  # runtime/npu/params.go RowChunk
MAX_TOKENS = 16
HEADER = 64
STACK = 1024  # Peano's default; raise if the prologue's frame is larger (README)


def a64(n):
    return (n + 63) // 64 * 64


def planes(fmt, t):
    """Bytes per row of each plane for a K-tile of t (docs/FORMAT.md 4)."""
    return {
        "Q4_0": [t // 2, t // 16],
        "Q5_0": [t // 2, t // 8, t // 16],
        "Q8_0": [t, t // 16],
        "Q4_K": [t // 2, t // 16, t // 64],
        "Q5_K": [t // 2, t // 8, t // 16, t // 64],
        "Q6_K": [t, t // 16, t // 128],
    }[fmt]


def record_bytes(fmt, t):
    """runtime/npu/act.go ActLayoutOf(fmt, t).Stride."""
    if BLOCK[fmt] == 32:
        return a64(t) + a64(2 * (t // 32))
    return a64(t) + a64(4 * (t // 256)) + a64(2 * (t // 16))


def build(gen, fmt, k_tile, rows):
    """The MLIR module of the (fmt, k_tile) GEMV for gen 1 (NPU1) or 2 (NPU2), with
    weight objects of at most rows rows per core (kernels/l1.tsv)."""
    lanes = 32 if gen == 1 else 64
    columns = 4 if gen == 1 else 8
    dev = NPU1Col4() if gen == 1 else NPU2()
    rows_core = ROW_CHUNK // CORES  # 128
    pieces = (rows_core + rows - 1) // rows
    obj = sum(a64(rows * p) for p in planes(fmt, k_tile))  # one piece, core layout
    rec = record_bytes(fmt, k_tile)

    u8 = np.dtype[np.uint8]
    f32 = np.dtype[np.float32]
    w_ty = np.ndarray[(obj,), u8]
    col_w_ty = np.ndarray[(CORES * obj,), u8]
    hdr_ty = np.ndarray[(HEADER // 4,), np.dtype[np.int32]]
    act_ty = np.ndarray[(MAX_TOKENS * rec,), u8]
    y_ty = np.ndarray[(MAX_TOKENS * rows_core,), f32]
    col_y_ty = np.ndarray[(CORES * MAX_TOKENS * rows_core,), f32]

    gemv = Kernel(
        "gemv_tile",
        "gemv.o",
        [w_ty, act_ty, y_ty, np.int32, np.int32, np.int32],
    )

    def core_fn(of_hdr, of_act, of_w, of_y, gemv):
        for _ in range_(0x7FFFFFFF):  # one dispatch per iteration
            h = of_hdr.acquire(1)
            tiles, tokens, chunks = h[3], h[4], h[6]
            of_hdr.release(1)
            for _ in range_(chunks):
                y = of_y.acquire(1)
                for i in range_(tiles):
                    a = of_act.acquire(1)
                    for p in range_(pieces):
                        w = of_w.acquire(1)
                        # Full pieces of rows rows: a short last chunk arrives padded
                        # with zero rows (README, open item 1).
                        gemv(w, a, y, p, tokens, i)
                        of_w.release(1)
                    of_act.release(1)
                of_y.release(1)

    hdr_fifo = ObjectFifo(hdr_ty, name="hdr", depth=1)
    act_fifo = ObjectFifo(act_ty, name="act", depth=2)
    workers, w_fifos, y_fifos = [], [], []
    for c in range(columns):
        w_col = ObjectFifo(col_w_ty, name=f"w{c}", depth=2)
        w_core = w_col.cons().split(
            [k * obj for k in range(CORES)],
            obj_types=[w_ty] * CORES,
            names=[f"w{c}_{k}" for k in range(CORES)],
        )
        y_col = ObjectFifo(col_y_ty, name=f"y{c}", depth=1)
        y_core = y_col.prod().join(
            [k * MAX_TOKENS * rows_core * 4 for k in range(CORES)],
            obj_types=[y_ty] * CORES,
            names=[f"y{c}_{k}" for k in range(CORES)],
        )
        for k in range(CORES):
            workers.append(
                Worker(
                    core_fn,
                    [hdr_fifo.cons(), act_fifo.cons(), w_core[k].cons(), y_core[k].prod(), gemv],
                    placement=Tile(c, 2 + k),
                    stack_size=STACK,
                )
            )
        w_fifos.append(w_col)
        y_fifos.append(y_col)

    # The runtime sequence is a template: the host (runtime/npu/txn) writes every
    # dispatch's shim BDs itself (per-column weight runs on arg 0, header + records on
    # arg 1, outputs on arg 2); aiecc's instruction file is kept to check placement.
    wts_ty = np.ndarray[(columns * CORES * obj,), u8]
    acts_ty = np.ndarray[(HEADER + MAX_TOKENS * rec,), u8]
    outs_ty = np.ndarray[(columns * CORES * MAX_TOKENS * rows_core,), f32]
    rt = Runtime()
    with rt.sequence(wts_ty, acts_ty, outs_ty) as (W, A, Y):
        rt.start(*workers)
        rt.fill(hdr_fifo.prod(), A, placement=Tile(0, 0))
        rt.fill(act_fifo.prod(), A, placement=Tile(0, 0))
        for c in range(columns):
            rt.fill(w_fifos[c].prod(), W, placement=Tile(c, 0))
        for c in range(columns):
            rt.drain(y_fifos[c].cons(), Y, placement=Tile(c, 0), wait=True)

    return Program(dev, rt).resolve_program(SequentialPlacer())


def main(gen):
    import argparse

    ap = argparse.ArgumentParser(description=f"xdna GEMV design, NPU{gen}")
    ap.add_argument("--format", required=True, choices=sorted(GGML))
    ap.add_argument("--k-tile", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True, help="rows per weight object (kernels/l1.tsv)")
    a = ap.parse_args()
    if a.k_tile % BLOCK[a.format] != 0:
        ap.error(f"K-tile {a.k_tile} is not a multiple of {a.format}'s block")
    print(build(gen, a.format, a.k_tile, a.rows))
