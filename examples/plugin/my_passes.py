"""A dlc pass plugin: fold relu(relu(x)) into relu(x). Load it with
`dlc-opt --load-pass-plugin=my_passes.py`, `dlc run --load-pass-plugin my_passes.py` or
`dlc.passes.load_plugin("my_passes.py")` (or simply `import my_passes`)."""

from dataclasses import dataclass

from dlc.dialects import ops
from dlc.passes import ModulePass, register
from dlc.passes.graph.match import apply_rules, producer


def relu_of_relu(op):
    """relu(relu(x)) -> relu(x): the inner relu's result replaces the outer one."""
    inner = producer(op.operands[0], ops.RELU)
    return None if inner is None else [op.operands[0]]


@register
@dataclass(frozen=True)
class FoldDoubleRelu(ModulePass):
    """Fold relu(relu(x)) into relu(x)."""

    name = "my-fold-double-relu"

    def run(self, module):
        apply_rules(module, {ops.RELU: [relu_of_relu]})
