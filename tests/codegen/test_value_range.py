"""value_range (`passes/codegen/value_range.py`): the integer interval of a tensor made by
linalg bodies, which decides whether the integer matmul kernel may take an f32 matmul. It
must bound every value it claims to (a wrong bound would truncate A to 16 bits) and answer
None for anything it cannot bound.
"""

from __future__ import annotations

import math

import pytest
from mlir import ir

from dlc.dialects.core import make_context
from dlc.passes.codegen.value_range import row_span, value_range

GENERIC = """
func.func @f(%x: tensor<4x{in_type}>, %s: tensor<f32>) -> tensor<4x{out_type}> {{
  %e = tensor.empty() : tensor<4x{out_type}>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                                        affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}}
      ins(%x, %s : tensor<4x{in_type}>, tensor<f32>) outs(%e : tensor<4x{out_type}>) {{
  ^bb0(%in: {in_type}, %scale: f32, %out: {out_type}):
{body}
  }} -> tensor<4x{out_type}>
  return %r : tensor<4x{out_type}>
}}
"""


def _range(body: str, in_type: str = "i8", out_type: str = "f32"):
    with make_context():
        module = ir.Module.parse(GENERIC.format(body=body, in_type=in_type, out_type=out_type))
        function = module.body.operations[0]
        returned = list(function.regions[0].blocks[0].operations)[-1].operands[0]
        return value_range(returned)


@pytest.mark.parametrize("body,expected", [
    # MatMulInteger's centered uint8 activation: uitofp(a) - 131
    (("%c = arith.constant 131.0 : f32\n %f = arith.uitofp %in : i8 to f32\n"
     " %y = arith.subf %f, %c : f32\n linalg.yield %y : f32"), (-131, 124)),
    ("%y = arith.sitofp %in : i8 to f32\n linalg.yield %y : f32", (-128, 127)),
    # a quantize: round(x / s) clamped by maxnumf/minnumf (NaN-free) is bounded
    (("%f = arith.sitofp %in : i8 to f32\n %d = arith.divf %f, %scale : f32\n"
     " %r = math.roundeven %d : f32\n %lo = arith.constant 0.0 : f32\n"
     " %hi = arith.constant 255.0 : f32\n %a = arith.maxnumf %r, %lo : f32\n"
     " %b = arith.minnumf %a, %hi : f32\n linalg.yield %b : f32"), (0, 255)),
    # ... maximumf propagates NaN: not bounded
    (("%f = arith.sitofp %in : i8 to f32\n %d = arith.divf %f, %scale : f32\n"
     " %r = math.roundeven %d : f32\n %lo = arith.constant 0.0 : f32\n"
     " %hi = arith.constant 255.0 : f32\n %a = arith.maximumf %r, %lo : f32\n"
     " %b = arith.minimumf %a, %hi : f32\n linalg.yield %b : f32"), None),
    # a division is not an integer
    (("%f = arith.sitofp %in : i8 to f32\n %d = arith.divf %f, %scale : f32\n"
     " linalg.yield %d : f32"), None),
    # 100 + 100 wraps in i8: the cast reading it knows only the type's range
    (("%c = arith.constant 100 : i8\n %a = arith.addi %c, %c : i8\n"
     " %y = arith.sitofp %a : i8 to f32\n linalg.yield %y : f32"), (-128, 127)),
    # products: (-128..127)^2
    (("%f = arith.sitofp %in : i8 to f32\n %y = arith.mulf %f, %f : f32\n"
     " linalg.yield %y : f32"), (-16256, 16384)),
])
def test_body_ranges(body, expected):
    found = _range(body)
    assert found == (None if expected is None else tuple(float(x) for x in expected))


def test_float_input_is_unknown():
    assert _range("%y = arith.addf %in, %in : f32\n linalg.yield %y : f32", in_type="f32") \
        is None


def test_wide_integers_are_unknown():
    # an i32 input of no known range is not 16-bit
    assert _range("%y = arith.sitofp %in : i32 to f32\n linalg.yield %y : f32",
                  in_type="i32") is None


def test_beyond_f32_exactness_is_unknown():
    body = ("%c = arith.constant 65536.0 : f32\n %f = arith.uitofp %in : i16 to f32\n"
            " %y = arith.mulf %f, %c : f32\n linalg.yield %y : f32")
    assert _range(body, in_type="i16") is None
    assert math.isfinite(_range("%y = arith.uitofp %in : i16 to f32\n linalg.yield %y : f32",
                                in_type="i16")[1])


ROWS = """
func.func @f(%x: tensor<4x8xi8>, %z: tensor<4xi8>, %y: tensor<4x8xi8>) -> tensor<{shape}xf32> {{
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}}
      ins(%x, %z, %y : tensor<4x8xi8>, tensor<4xi8>, tensor<4x8xi8>)
      outs(%e : tensor<4x8xf32>) {{
  ^bb0(%in: i8, %zp: i8, %other: i8, %out: f32):
{body}
  }} -> tensor<4x8xf32>
{tail}
}}
"""


def _span(body: str, tail: str = "  return %r : tensor<4x8xf32>", shape: str = "4x8"):
    with make_context():
        module = ir.Module.parse(ROWS.format(body=body, tail=tail, shape=shape))
        function = module.body.operations[0]
        returned = list(function.regions[0].blocks[0].operations)[-1].operands[0]
        return row_span(returned)


CENTERED = (" %f = arith.uitofp %in : i8 to f32\n %g = arith.uitofp %zp : i8 to f32\n"
            " %c = arith.subf %f, %g : f32\n linalg.yield %c : f32")


@pytest.mark.parametrize("body,tail,shape,expected", [
    # u8 minus a per-row zero point: values in [-255, 255], 255 apart within a row
    (CENTERED, "  return %r : tensor<4x8xf32>", "4x8", 255),
    # ... a slice of the same rank takes parts of rows; a reshape keeping the last dim too
    (CENTERED, ("  %s = tensor.extract_slice %r[0, 2] [4, 5] [1, 1] : tensor<4x8xf32> to "
                "tensor<4x5xf32>\n  return %s : tensor<4x5xf32>"), "4x5", 255),
    (CENTERED, ("  %s = tensor.collapse_shape %r [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>\n"
                "  return %s : tensor<32xf32>"), "32", 510),  # (rows merged: the range's width)
    # u8 minus another varying u8: the range's width
    ((" %f = arith.uitofp %in : i8 to f32\n %g = arith.uitofp %other : i8 to f32\n"
      " %c = arith.subf %f, %g : f32\n linalg.yield %c : f32"),
     "  return %r : tensor<4x8xf32>", "4x8", 510),
    # a per-row value alone: span 0
    (" %g = arith.sitofp %zp : i8 to f32\n linalg.yield %g : f32",
     "  return %r : tensor<4x8xf32>", "4x8", 0),
    # a product by a per-row value of unknown range: unknown
    ((" %f = arith.uitofp %in : i8 to f32\n %g = arith.uitofp %zp : i8 to f32\n"
      " %d = arith.divf %f, %g : f32\n linalg.yield %d : f32"),
     "  return %r : tensor<4x8xf32>", "4x8", None),
])
def test_row_span(body, tail, shape, expected):
    assert _span(body, tail, shape) == expected
