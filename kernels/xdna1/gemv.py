# XDNA1 (NPU1: Phoenix / Hawk Point, 4 columns x 4 AIE2 cores) GEMV design.
# Usage: python3 gemv.py --format Q4_0 --k-tile 128 --rows 128 > aie.mlir
# (kernels/Makefile runs it for every xdna1 slot; see kernels/common/design.py).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import design  # noqa: E402

if __name__ == "__main__":
    design.main(1)
