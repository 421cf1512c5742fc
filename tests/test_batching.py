"""One compile for every batch (dlc.batching): a model whose only dynamic size is a batch that
it computes row by row runs its batch-1 code once per row; any other model is compiled per
call shape, and says why."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc import batching

RNG = np.random.default_rng(3)
W = RNG.standard_normal([16, 8, 3, 3]).astype(np.float32) * 0.2
FC = RNG.standard_normal([16, 10]).astype(np.float32)


@pytest.fixture(autouse=True)
def small_rows(monkeypatch):
    """The models here are small: a row's work is not what these tests are about."""
    monkeypatch.setattr(batching, "MIN_ROW_WORK", 0)
    # (these models' ops take a dynamic size: one compile with it would run them instead
    # of the rows this module tests; tests/test_dynamic_function.py tests that path)
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "rows", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def value(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(dims))


def cnn():
    """Conv 3x3 + ReLU + global average pool + flatten + Gemm: what a classifier is."""
    return model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("MatMul", ["f", "fc"], ["y"])],
        [value("x", ["N", 8, 12, 12])], [value("y", ["N", 10])],
        [numpy_helper.from_array(W, "w"), numpy_helper.from_array(FC, "fc")])


def cnn_reference(x):
    import torch

    c = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(W), padding=1)
    return (torch.relu(c).mean((2, 3)) @ torch.from_numpy(FC)).numpy()


def test_a_separable_cnn_compiles_once_for_every_batch():
    compiled = dlc.compile(cnn())
    for batch in (1, 3, 8, 0, 5):
        x = RNG.standard_normal([batch, 8, 12, 12]).astype(np.float32)
        (y,) = compiled(x)
        assert y.shape == (batch, 10)
        np.testing.assert_allclose(y, cnn_reference(x), rtol=1e-4, atol=1e-4)
    assert compiled.rows is not None and compiled.rows.batched == ("x",)
    assert compiled.compiles == 1 and compiled.specializations == [{"x": (1, 8, 12, 12)}]
    assert "one compile for every batch" in repr(compiled)


def test_the_rows_are_views_not_copies_of_strided_inputs():
    compiled = dlc.compile(cnn())
    x = RNG.standard_normal([4, 8, 12, 24]).astype(np.float32)[..., ::2]  # (not contiguous)
    np.testing.assert_allclose(compiled(x)[0], cnn_reference(np.ascontiguousarray(x)),
                               rtol=1e-4, atol=1e-4)


def test_attention_per_row_is_separable():
    """softmax(x xᵀ) x for each row: matmuls over the batch dimension of both operands."""
    m = model(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["x", "t"], ["s"]),
         helper.make_node("Softmax", ["s"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "x"], ["y"])],
        [value("x", ["N", 6, 4])], [value("y", ["N", 6, 4])])
    compiled = dlc.compile(m)
    for batch in (2, 3):
        x = RNG.standard_normal([batch, 6, 4]).astype(np.float32)
        s = x @ x.transpose(0, 2, 1)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        np.testing.assert_allclose(compiled(x)[0], p @ x, rtol=1e-4, atol=1e-5)
    assert compiled.rows is not None and compiled.compiles == 1


def test_an_input_without_the_batch_is_shared_by_the_rows():
    m = model([helper.make_node("Add", ["x", "b"], ["s"]),
               helper.make_node("Relu", ["s"], ["y"])],
              [value("x", ["N", 4, 5]), value("b", [5])], [value("y", ["N", 4, 5])])
    compiled = dlc.compile(m)
    x = RNG.standard_normal([3, 4, 5]).astype(np.float32)
    b = RNG.standard_normal([5]).astype(np.float32)
    np.testing.assert_allclose(compiled(x, b)[0], np.maximum(x + b, 0))
    assert compiled.rows.batched == ("x",)


def test_a_row_repeated_to_the_batch_is_separable():
    """A table expanded to the batch (position ids) and a splat sized by it (zeros like x)."""
    row = RNG.standard_normal([1, 4]).astype(np.float32)
    m = model([helper.make_node("Shape", ["x"], ["shape"]),
               helper.make_node("Expand", ["row", "shape"], ["table"]),
               helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                                value=numpy_helper.from_array(np.array([1.5], np.float32))),
               helper.make_node("Mul", ["x", "table"], ["t"]),
               helper.make_node("Add", ["t", "ones"], ["y"])],
              [value("x", ["N", 4])], [value("y", ["N", 4])],
              [numpy_helper.from_array(row, "row")])
    compiled = dlc.compile(m)
    for batch in (1, 3, 12):
        x = RNG.standard_normal([batch, 4]).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], x * row + 1.5, rtol=1e-6)
    assert compiled.rows is not None, compiled.rows_reason
    assert compiled.compiles == 1


def test_a_batch_merged_with_the_next_axis_is_separable():
    """[N, 40, 8] viewed as [2N, 40, 4] (heads merged into the batch, as attention exports
    do), multiplied, and viewed back: each row's elements stay its own."""
    w = RNG.standard_normal([4, 3]).astype(np.float32)
    shape = numpy_helper.from_array(np.array([-1, 40, 4], np.int64), "s1")
    back = numpy_helper.from_array(np.array([-1, 240], np.int64), "s2")
    m = model([helper.make_node("Reshape", ["x", "s1"], ["t"]),
               helper.make_node("MatMul", ["t", "w"], ["u"]),
               helper.make_node("Reshape", ["u", "s2"], ["y"])],
              [value("x", ["N", 40, 8])], [value("y", ["N", 240])],
              [shape, back, numpy_helper.from_array(w, "w")])
    compiled = dlc.compile(m)
    for batch in (1, 4):
        x = RNG.standard_normal([batch, 40, 8]).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], (x.reshape(-1, 40, 4) @ w).reshape(-1, 240),
                                   rtol=1e-5, atol=1e-5)
    assert compiled.rows is not None, compiled.rows_reason


def test_gathering_each_rows_own_elements_by_flat_positions_is_separable():
    """The exporters' attention mask: x viewed as [N*S, 1], gathered by the constant flat
    positions b*S + s (built from x's shape, folded by the importer at each batch)."""
    scalars = [numpy_helper.from_array(np.array(v, np.int64), n)
               for n, v in (("z", 0), ("o", 1), ("one1", [1]), ("flat", [-1, 1]))]
    m = model([helper.make_node("Shape", ["x"], ["shape"]),
               helper.make_node("Gather", ["shape", "z"], ["n"], axis=0),
               helper.make_node("Gather", ["shape", "o"], ["s"], axis=0),
               helper.make_node("Mul", ["n", "s"], ["total"]),
               helper.make_node("Range", ["z", "total", "o"], ["r"]),
               helper.make_node("Unsqueeze", ["n", "zero"], ["n1"]),
               helper.make_node("Unsqueeze", ["s", "zero"], ["s1"]),
               helper.make_node("Concat", ["n1", "one1", "one1", "s1"], ["ishape"], axis=0),
               helper.make_node("Reshape", ["r", "ishape"], ["idx"]),
               helper.make_node("Reshape", ["x", "flat"], ["xf"]),
               helper.make_node("Gather", ["xf", "idx"], ["g"], axis=0),
               helper.make_node("Reshape", ["g", "shape"], ["y0"]),
               helper.make_node("Mul", ["y0", "x"], ["y"])],
              [value("x", ["N", 40])], [value("y", ["N", 40])], [*scalars, ZERO])
    compiled = dlc.compile(m)
    for batch in (1, 3, 5):
        x = RNG.standard_normal([batch, 40]).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], x * x, rtol=1e-6)
    assert compiled.rows is not None, compiled.rows_reason
    assert compiled.compiles == 1


def _shape0(name="x"):
    """Nodes computing x's batch size as a float [1] tensor, `n`."""
    return [helper.make_node("Shape", [name], ["shape"]),
            helper.make_node("Gather", ["shape", "zero"], ["n64"], axis=0),
            helper.make_node("Cast", ["n64"], ["n"], to=TensorProto.FLOAT)]


ZERO = numpy_helper.from_array(np.array([0], np.int64), "zero")
MIXING = {
    # name: (nodes, extra initializers, numpy reference, the reason's words)
    "sum over the batch": ([helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=1),
                            helper.make_node("Mul", ["x", "zerof"], ["z"]),
                            helper.make_node("Add", ["s", "z"], ["y"])],  # (back to N rows)
                           [numpy_helper.from_array(np.array([0], np.int64), "axes"),
                            numpy_helper.from_array(np.zeros([], np.float32), "zerof")],
                           lambda x: x.sum(0, keepdims=True) + 0 * x, "mixes the rows"),
    "softmax over the batch": ([helper.make_node("Softmax", ["x"], ["y"], axis=0)], [],
                               lambda x: np.exp(x) / np.exp(x).sum(0), "mixes the rows"),
    "times the batch size": ([*_shape0(), helper.make_node("Mul", ["x", "n"], ["y"])], [ZERO],
                             lambda x: x * x.shape[0], "depends on the batch size"),
    "a slice starting at the batch size": (
        [*_shape0(), helper.make_node("Add", ["n64", "four"], ["end"]),
         helper.make_node("Slice", ["x", "n64", "end", "one"], ["y"])],
        [ZERO, numpy_helper.from_array(np.array([4], np.int64), "four"),
         numpy_helper.from_array(np.array([1], np.int64), "one")],
        lambda x: x[:, x.shape[0]:x.shape[0] + 4], "depends on the batch size"),
    "rows reversed": ([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
                      [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
                       (("s", [-1]), ("e", [-(2 ** 62)]), ("a", [0]), ("st", [-1]))],
                      lambda x: x[::-1], ""),
}


@pytest.mark.parametrize("name", MIXING)
def test_a_model_that_mixes_rows_is_compiled_per_shape(name):
    nodes, initializers, reference, reason = MIXING[name]
    m = model(nodes, [value("x", ["N", 40])], [value("y", ["N", "Y"])], initializers)
    compiled = dlc.compile(m)
    for batch in (2, 3):
        x = RNG.standard_normal([batch, 40]).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], reference(x), rtol=1e-5, atol=1e-6)
    assert compiled.rows is None and reason in compiled.rows_reason
    assert compiled.compiles == 2


def test_a_program_that_changes_at_batch_1_is_compiled_per_shape():
    """Squeeze without axes drops every size-1 axis: the batch too, at batch 1 only."""
    m = model([helper.make_node("Squeeze", ["x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
              [value("x", ["N", 1, 4])], [value("y", ["N", 4])])
    compiled = dlc.compile(m)
    for batch in (2, 3):
        x = RNG.standard_normal([batch, 1, 4]).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], np.maximum(x[:, 0], 0))
    assert compiled.rows is None and "depends on the batch size" in compiled.rows_reason


def test_vector_matrix_products_of_the_batch_are_compiled_per_shape():
    """An MLP's rows are the batch: per row, its matmuls would read the weights per row."""
    m = model([helper.make_node("MatMul", ["x", "fc"], ["y"])], [value("x", ["N", 16])],
              [value("y", ["N", 10])], [numpy_helper.from_array(FC, "fc")])
    compiled = dlc.compile(m)
    x = RNG.standard_normal([5, 16]).astype(np.float32)
    np.testing.assert_allclose(compiled(x)[0], x @ FC, rtol=1e-5, atol=1e-5)
    assert compiled.rows is None and "fewer than 32 rows a row" in compiled.rows_reason


def test_each_sequence_length_is_planned_and_compiled_once_for_every_batch():
    """[N, S, 16] @ W: the tokens of a row are the product's rows; with 32 or more, one
    compile per sequence length serves every batch; with fewer, per shape."""
    m = model([helper.make_node("MatMul", ["x", "fc"], ["y"])], [value("x", ["N", "S", 16])],
              [value("y", ["N", "S", 10])], [numpy_helper.from_array(FC, "fc")])
    compiled = dlc.compile(m)
    for batch, seq in [(2, 40), (5, 40), (3, 33), (1, 33), (4, 40)]:
        x = RNG.standard_normal([batch, seq, 16]).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], x @ FC, rtol=1e-5, atol=1e-5)
        assert compiled.rows is not None, compiled.rows_reason
    assert compiled.compiles == 2 and sorted(s["x"] for s in compiled.specializations) == [
        (1, 33, 16), (1, 40, 16)]
    x = RNG.standard_normal([3, 8, 16]).astype(np.float32)
    np.testing.assert_allclose(compiled(x)[0], x @ FC, rtol=1e-5, atol=1e-5)
    assert compiled.rows is None and "fewer than 32 rows" in compiled.rows_reason
    assert compiled.compiles == 3


def test_a_small_row_is_compiled_per_shape(monkeypatch):
    monkeypatch.setattr(batching, "MIN_ROW_WORK", 10 ** 9)
    compiled = dlc.compile(cnn())
    compiled(RNG.standard_normal([2, 8, 12, 12]).astype(np.float32))
    assert compiled.rows is None and "a call per row would cost more" in compiled.rows_reason


@pytest.mark.parametrize("dims", [[None, 4], ["N", "N"]])
def test_a_batch_that_is_not_one_named_size_at_axis_0_only_is_compiled_per_shape(dims):
    m = model([helper.make_node("Relu", ["x"], ["y"])], [value("x", dims)], [value("y", dims)])
    compiled = dlc.compile(m)
    compiled(np.ones([4, 4], np.float32))
    assert compiled.rows is None and "one named dynamic size" in compiled.rows_reason


def test_the_setting_turns_it_off(monkeypatch):
    monkeypatch.setenv("DLC_BATCH_ROWS", "0")
    compiled = dlc.compile(cnn())
    for batch in (1, 2):
        compiled(RNG.standard_normal([batch, 8, 12, 12]).astype(np.float32))
    assert compiled.rows is None and compiled.rows_reason == "DLC_BATCH_ROWS=0"
    assert compiled.compiles == 2


def test_a_bad_call_is_still_a_clear_error():
    compiled = dlc.compile(cnn())
    compiled(np.zeros([1, 8, 12, 12], np.float32))
    with pytest.raises(dlc.InputError, match="expected"):
        compiled(np.zeros([2, 8, 12, 13], np.float32))
    with pytest.raises(dlc.InputError, match="dtype"):
        compiled(np.zeros([2, 8, 12, 12], np.float64))


def test_an_exported_program_with_a_batch_dim_compiles_once():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv(x)).flatten(1)

    net = Net().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    exported = torch.export.export(net, (torch.randn(2, 8, 6, 6),),
                                   dynamic_shapes=({0: batch},))
    compiled = dlc.compile(exported)
    for n in (1, 3):
        x = torch.randn(n, 8, 6, 6)
        with torch.no_grad():
            expected = net(x).numpy()
        np.testing.assert_allclose(compiled(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
    assert compiled.rows is not None, compiled.rows_reason
    assert compiled.compiles == 1



def test_flat_mask_positions_of_long_sequences_stay_separable():
    # transformers' masks gathered by flat positions b * S + s (Range, Mul, Add of shape
    # values): the plan's imports at batch 1, 2 and 11 fold them alike (11 x 400 positions
    # are past the importer's folding limit: folded at batch 1 only, the modules differed
    # and BERT at (4, 384) compiled per shape)
    m = model(
        [helper.make_node("Shape", ["x"], ["shape"], end=2),
         helper.make_node("Gather", ["shape", "zero"], ["batch"]),
         helper.make_node("Gather", ["shape", "one"], ["seq"]),
         helper.make_node("Range", ["zero", "batch", "one"], ["rows"]),
         helper.make_node("Unsqueeze", ["rows", "axis1"], ["rows1"]),
         helper.make_node("Mul", ["rows1", "seq"], ["starts"]),
         helper.make_node("Range", ["zero", "seq", "one"], ["columns"]),
         helper.make_node("Unsqueeze", ["columns", "axis0"], ["columns0"]),
         helper.make_node("Add", ["starts", "columns0"], ["where"]),
         helper.make_node("Cast", ["where"], ["where32"], to=TensorProto.INT32),
         helper.make_node("Reshape", ["mask", "flat"], ["flat_mask"]),
         helper.make_node("Gather", ["flat_mask", "where32"], ["kept"]),
         helper.make_node("Unsqueeze", ["kept", "axis2"], ["kept2"]),
         helper.make_node("Mul", ["x", "kept2"], ["y"])],
        [value("x", ["N", "S", 4]), value("mask", ["N", "S"])], [value("y", ["N", "S", 4])],
        [numpy_helper.from_array(a, n) for n, a in {
            "zero": np.array(0, np.int64), "one": np.array(1, np.int64),
            "axis0": np.array([0], np.int64), "axis1": np.array([1], np.int64),
            "axis2": np.array([2], np.int64), "flat": np.array([-1], np.int64)}.items()])
    compiled = dlc.compile(m)
    x = RNG.standard_normal([2, 400, 4]).astype(np.float32)
    mask = (RNG.random([2, 400]) > 0.5).astype(np.float32)
    np.testing.assert_allclose(compiled(x, mask)[0], x * mask[..., None], rtol=1e-6)
    assert compiled.rows is not None, compiled.rows_reason
