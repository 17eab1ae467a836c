"""The fused-attention kernel a published run ran: the framework's own where its recipe names
one, else the rows of its container's cuDNN where the hardware's table holds them, else the
hardware file's kernel. The published sets and the fp8-pairs both ask it."""

from simsp.validate.recipes import Recipe


def attention_kernel(recipe: Recipe, hw) -> tuple[str, str]:
    """(training.attention_kernel, the note saying why) of a recipe's run on hardware `hw`: the
    framework's own kernel where it names one; else, where the hardware's table holds rows
    measured at the cuDNN of the recipe's container, those; else the hardware file's kernel
    ("", no note)."""
    if recipe.attention_kernel:
        return recipe.attention_kernel, f"attention kernel {recipe.attention_kernel} (not TE's)"
    cudnn = recipe.cudnn_kernel
    if cudnn and cudnn in _table_kernels(hw.calibration.flash_attention):
        return cudnn, f"attention kernel {cudnn} (TE's cuDNN at its container's version)"
    return "", ""


_KERNELS: dict[str, frozenset] = {}


def _table_kernels(path: str) -> frozenset:
    """The kernel names of a FlashAttention table (read once per process)."""
    if path not in _KERNELS:
        from simsp.tables import read_attention_table

        table = read_attention_table(path) if path else None
        _KERNELS[path] = frozenset(p.kernel for p in table.points) if table else frozenset()
    return _KERNELS[path]
