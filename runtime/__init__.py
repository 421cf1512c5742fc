"""runtime: running compiled code (jit, cache, cuda) and exported libraries (`load`: numpy and
ctypes only, no mlir or onnx; see `loader`)."""


def __getattr__(name: str):
    if name == "load":
        from dlc.runtime.loader import load

        return load
    raise AttributeError(f"module 'dlc.runtime' has no attribute {name!r}")
