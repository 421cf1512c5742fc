"""runtime: running compiled code (jit, cache, cuda) and exported libraries (`load`: numpy and
ctypes only, no mlir or onnx; see `loader`).

What belongs here: native functions (JIT engine or shared object), signatures and descriptors,
the compile cache, machine code in processes, export. What does not: frontends, passes'
rewrites, the tools; the runtime imports neither frontends nor tools."""


def __getattr__(name: str):
    if name == "load":
        from dlc.runtime.loader import load

        return load
    raise AttributeError(f"module 'dlc.runtime' has no attribute {name!r}")
