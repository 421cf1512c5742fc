"""The root of dlc's exceptions: every error dlc raises on purpose derives from DlcError."""


class DlcError(Exception):
    """Base class of the errors dlc reports to its users."""


class IndexOutOfRangeError(DlcError, IndexError):
    """A compiled model read an index out of range at run time (a Gather, a Scatter...).

    The message names the op, its ONNX node and the offending value; the call's outputs are
    discarded. Like onnxruntime, dlc refuses such indices instead of clamping them silently.
    """


class InputError(DlcError, ValueError):
    """The inputs of a call do not match the compiled signature (count, names, dtype, shape).

    A ValueError too, as numpy's and onnxruntime's are; the message names the input and
    shows the expected signature.
    """
