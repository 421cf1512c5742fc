"""The root of dlc's exceptions: every error dlc raises on purpose derives from DlcError.

Each layer defines its own (FrontendError, PipelineError, CompileError, LoadError...) as a
DlcError, keeping a builtin base where callers may catch that (ValueError, RuntimeError);
tests/test_errors.py checks every exception class of the package. Warnings are not errors.
"""


class DlcError(Exception):
    """Base class of the errors dlc reports to its users."""


class ArgumentError(DlcError, ValueError):
    """An argument of dlc's API, or the environment variable standing for one, is out of range:
    `opt_level=7`, `num_threads=0`, an unknown stage. A ValueError too; the message names the
    argument, what it may be and what it got.
    """


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
