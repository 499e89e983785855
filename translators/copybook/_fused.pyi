# the fused copybook kernel (_fused.c): see kernels.FusedKernel for the program it runs
from typing import Any

def run(
    data: Any, n: int, record_size: int, program: Any, instances: Any, tables: bytes,
    values: Any, flags: Any, text_offsets: Any, text: Any, counts: Any,
) -> None: ...
