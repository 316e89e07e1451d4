"""Kubernetes resource quantities ("500m", "10Gi", "1.2Ti", "4") as exact decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def parse_quantity(value: str | int | float | None) -> Decimal:
    """Parse a quantity; raises ``ValueError`` when malformed. ``None`` is zero."""
    if value is None:
        return Decimal(0)
    if isinstance(value, int | float):
        return Decimal(str(value))
    m = _RE.match(value.strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"invalid quantity {value!r}")
    try:
        return Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation as exc:
        raise ValueError(f"invalid quantity {value!r}") from exc
