"""`contiguous` and `transposed`: C-contiguous copies of large constant arrays read through
strided views (a filter FCHW -> HWCF, a weight's transpose, a packing), the same bytes as
`np.asarray(view, order="C")`, copied in blocks that the L1 cache holds.

numpy copies a view in the order of the destination: when the destination's innermost axis is
not the source's, each element it writes comes from another source row (another cache line,
often another page), and a row's next elements, which the next outer step reads, are evicted
by then. Copying a few of those rows at a time (`out[..., i:i + b] = view[..., i:i + b]`) keeps
the b rows' lines in L1 until they are used up. b is small: the rows are a power of two apart
in most weights, so more than the L1's 8 ways would evict each other (float32, AMD EPYC, min of
15; b = 8 against numpy's copy: 2048x512x1x1 -> HWCF 3.4 -> 0.9 ms, 1000x2048 transposed
7.4 -> 1.8 ms, 512x512x3x3 -> HWCF 4.5 -> 2.2 ms, 768x3072 transposed 8.5 -> 3.3 ms; b = 32:
2.2, 5.9, 4.3, 7.1 ms). A view whose innermost axis is the source's (a packing into panels of
rows' runs) copies runs already, and one whose rows are close reuses their lines: numpy's.

In the compiler (`dlc.passes.graph.match.numpy_to_elements`, so every transposed constant, and
the codegen's weight transposes), read from the attributes' data: ResNet-50's 53 filters to
HWCF, with their attributes, 74 -> 43 ms; its classifier transposed 7.8 -> 2.7 ms.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# views smaller than this are copied by numpy at once (a block's Python overhead, ~2 us, would
# be a good part of their copy)
SMALL_BYTES = 1 << 16
# ... and views whose innermost axis steps fewer bytes than this through the source: numpy's
# copy reuses the lines of rows this close (float32 [R, C] transposed, numpy against b = 8:
# C = 64 0.08 / 0.19 ms, 256 0.12 / 0.11, 512 0.30 / 0.09, 4096 (R = 128) 1.46 / 0.33)
ROW_BYTES = 1 << 10
# ... and views whose innermost axis has at most this many elements: numpy's copy reads that
# many rows per step, which L1 holds (BERT's weights packed into panels of 16 or 32 rows,
# [R/t, t, K] -> [R/t, K, t], numpy against blocked: 768x768 0.23 / 0.32 ms, 3072x768 1.04 /
# 1.42, 2304x768 (t = 32) 0.69 / 1.05; only 768x3072 gains, 2.25 / 1.46, rows 12 KiB apart)
FEW_ROWS = 32
# the bytes of destination each source row gives per block: 8 rows of float32, 16 of float16
# or int8 (float16 2048x512x1x1 -> HWCF: b = 8 0.78, 16 0.53 ms; int8 1000x2048 transposed:
# b = 16 0.92, 32 2.5 ms), 4 of float64
BLOCK_BYTES = 32
MIN_BLOCK, MAX_BLOCK = 4, 16


def contiguous(view: np.ndarray) -> np.ndarray:
    """`np.asarray(view, order="C")`, copied in blocks of the destination's innermost axis when
    that axis strides through the source (`view` itself when it is C-contiguous; a 0-d array
    stays 0-d, which `np.ascontiguousarray` would make [1])."""
    if view.flags.c_contiguous or view.nbytes < SMALL_BYTES:
        return np.asarray(view, order="C")
    # (size-1 axes have arbitrary strides: without them the innermost axis is a real one)
    squeezed = view.reshape([n for n in view.shape if n != 1])
    few = squeezed.ndim < 2 or squeezed.shape[-1] <= FEW_ROWS
    if few or abs(squeezed.strides[-1]) < ROW_BYTES:
        return np.asarray(view, order="C")
    return _blocked_copy(squeezed).reshape(view.shape)


def transposed(array: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """`np.asarray(np.transpose(array, perm), order="C")`, copied in blocks (see `contiguous`)."""
    return contiguous(np.transpose(array, perm))


def _blocked_copy(view: np.ndarray) -> np.ndarray:
    out = np.empty(view.shape, view.dtype)
    block = min(MAX_BLOCK, max(MIN_BLOCK, BLOCK_BYTES // view.itemsize))
    for start in range(0, view.shape[-1], block):
        out[..., start:start + block] = view[..., start:start + block]
    return out
