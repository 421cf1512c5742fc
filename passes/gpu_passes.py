"""Registers the GPU backend's passes (`dlc.passes.gpu`, a subpackage that the registry's
scan of `dlc.passes` modules does not import) under their pipeline names."""

import dlc.passes.gpu  # noqa: F401  (registration happens on import)
