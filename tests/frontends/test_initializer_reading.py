"""Large raw initializers are read once (issue 20): `import_model` leaves their size check to
`validate.read_raw`, which reads their bytes for the import; the model is rejected with the
same message as `load_model`'s, and the values are numpy_helper.to_array's."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper, numpy_helper

from dlc.dialects import make_context
from dlc.frontends.onnx_importer import import_model, load_model
from dlc.frontends.onnx_node import ModelValidationError
from dlc.frontends.validate import READ_RAW_ELEMENTS, read_raw, reads_raw
from tests.conftest import make_model

WRONG_SIZE = (r"initializer 'w' declares shape \[4, 1024\] of float \(16384 bytes\) "
              r"but holds 16380 bytes of data")


def weight_model(shape=(4, 1024)) -> onnx.ModelProto:
    """x + w, w a float initializer of `shape` (raw data)."""
    w = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    return make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                      {"x": (np.float32, list(shape))}, {"y": (np.float32, list(shape))},
                      initializers={"w": w}, check=False)


def truncated(model: onnx.ModelProto) -> onnx.ModelProto:
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-4]
    return model


def test_the_import_rejects_a_large_initializer_of_the_wrong_size() -> None:
    with pytest.raises(ModelValidationError, match=WRONG_SIZE):
        import_model(truncated(weight_model()), make_context())


def test_load_model_still_checks_it() -> None:
    with pytest.raises(ModelValidationError, match=WRONG_SIZE):
        load_model(truncated(weight_model()))


def test_a_small_one_is_rejected_by_the_validation() -> None:
    model = truncated(weight_model((2, 4)))
    with pytest.raises(ModelValidationError, match=r"initializer 'w' .* but holds 28 bytes"):
        load_model(model, read_sizes=False)


def test_the_imported_values_are_the_model_s() -> None:
    model = weight_model()
    context = make_context()
    imported = import_model(model, context)
    with context:
        main = imported.module.body.operations[0]
        (value,) = [ir.DenseElementsAttr(op.attributes["value"])
                    for op in main.regions[0].blocks[0].operations if "value" in op.attributes]
        np.testing.assert_array_equal(np.array(value),
                                      numpy_helper.to_array(model.graph.initializer[0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8,
                                   np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64, np.bool_])
def test_read_raw_is_to_array(dtype) -> None:
    values = (np.arange(2 * READ_RAW_ELEMENTS) % 7).astype(dtype).reshape(2, -1, 4)
    tensor = numpy_helper.from_array(values, "w")
    assert reads_raw(tensor)
    got, expected = read_raw(tensor), numpy_helper.to_array(tensor)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_what_read_raw_leaves_to_to_array() -> None:
    small = numpy_helper.from_array(np.zeros(READ_RAW_ELEMENTS - 1, np.float32), "w")
    typed = helper.make_tensor("w", onnx.TensorProto.FLOAT, [READ_RAW_ELEMENTS],
                               np.zeros(READ_RAW_ELEMENTS, np.float32))  # (float_data)
    packed = helper.make_tensor("w", onnx.TensorProto.INT4, [2 * READ_RAW_ELEMENTS],
                                np.zeros(2 * READ_RAW_ELEMENTS, np.int8), raw=False)
    strings = numpy_helper.from_array(np.array(["a"] * READ_RAW_ELEMENTS, dtype=object), "w")
    external = numpy_helper.from_array(np.zeros(READ_RAW_ELEMENTS, np.float32), "w")
    external.data_location = onnx.TensorProto.EXTERNAL
    for tensor in (small, typed, packed, strings, external):
        assert not reads_raw(tensor)
