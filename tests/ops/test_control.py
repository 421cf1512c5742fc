"""If, Loop and Scan (specialized and unrolled at import time) against onnx.reference."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest

import dlc
from tests.conftest import run_both


def parse(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


IF_MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
agraph (bool c, float[2, 3] x, float[2, 3] y) => (float[2, 3] z) {
    z = If (c) <
        then_branch = t () => (float[2, 3] a) { a = Add (x, y) },
        else_branch = e () => (float[2, 3] b) { b = Mul (x, y) }
    >
}
"""


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_a_runtime_condition_selects_between_branches(flag):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    run_both(parse(IF_MODEL), [np.array(flag), x, x + 1])


def test_if_with_a_constant_condition_imports_only_the_branch_taken():
    model = parse(IF_MODEL)
    x = np.ones((2, 3), np.float32)
    compiled = dlc.compile(model, constants={"c": np.array(False)})
    assert "dlc.add" not in str(compiled.ir("dlc"))
    np.testing.assert_array_equal(compiled(x, x * 3)[0], x * 3)


LOOP_MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
agraph (float[3] x) => (float[3] total, float[4, 3] partial) {
    m = Constant <value = int64 {4}> ()
    c = Constant <value = bool {1}> ()
    total, partial = Loop (m, c, x) <
        body = b (int64 i, bool cond, float[3] acc) => (bool cond_out, float[3] next,
                                                         float[3] scan) {
            cond_out = Identity (cond)
            f = Cast <to = 1> (i)
            next = Add (acc, f)
            scan = Mul (next, acc)
        }
    >
}
"""


def test_loop_with_a_constant_trip_count_is_unrolled():
    run_both(parse(LOOP_MODEL), [np.array([1.0, -2.0, 0.5], np.float32)])


def test_loop_whose_body_computes_its_condition_is_a_clear_error():
    model = parse(LOOP_MODEL.replace("cond_out = Identity (cond)",
                                     "less = Less (acc, x)\n cond_out = ReduceMax <keepdims = 0> (less)"))
    with pytest.raises(dlc.DlcError, match="condition at run time"):
        dlc.compile(model)


SCAN_MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
agraph (float[2] init, float[4, 2] xs, float[2, 4] ys) => (float[2] s, float[2, 4] out) {
    s, out = Scan (init, xs, ys) <
        num_scan_inputs = 2, scan_input_axes = [0, 1], scan_input_directions = [0, 1],
        scan_output_axes = [-1],
        body = b (float[2] acc, float[2] x, float[2] y) => (float[2] acc_out, float[2] o) {
            xy = Mul (x, y)
            acc_out = Add (acc, xy)
            o = Sub (acc_out, x)
        }
    >
}
"""


def test_scan_with_axes_and_directions_is_unrolled():
    # onnx.reference does not implement reversed scan inputs: onnxruntime is the oracle here
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ([2], [4, 2], [2, 4])]
    model = parse(SCAN_MODEL)
    feeds = dict(zip(["init", "xs", "ys"], inputs))
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    actual = dlc.compile(model)(feeds)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def test_unsupported_op_inside_a_body_is_listed_with_its_path():
    model = parse(IF_MODEL.replace("a = Add (x, y)", "a = Gelu <approximate = \"none\"> (x)")
                  .replace('"" : 17', '"" : 20'))
    model.graph.node[0].attribute[0].g.node[0].op_type = "NoSuchOp"
    with pytest.raises(dlc.DlcError, match="NoSuchOp"):
        dlc.compile(model)
