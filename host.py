"""The CPU this process runs on, as Linux's /proc/cpuinfo describes its first processor, read
once: its feature flags (the register tiles, the integer kernels, the compile cache's and the
tuning records' keys, `dlc export --target native` depend on them) and its model name. Empty
where there is no /proc/cpuinfo (other systems: the code is then for a baseline CPU)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


@cache
def _fields() -> dict[str, str]:
    fields: dict[str, str] = {}
    try:
        text = CPUINFO.read_text()
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            if fields:  # (the first processor's block ends: all processors are the same CPU)
                break
            continue
        name, colon, value = line.partition(":")
        if colon:
            fields.setdefault(name.strip(), value.strip())
    return fields


def flags() -> tuple[str, ...]:
    """The CPU's feature flags, in /proc/cpuinfo's order (x86 `flags`, Arm `Features`)."""
    fields = _fields()
    return tuple((fields.get("flags") or fields.get("Features") or "").split())


def model_name() -> str | None:
    """The CPU's model name (`AMD EPYC 9R14 ...`), if /proc/cpuinfo gives one."""
    return _fields().get("model name") or None
