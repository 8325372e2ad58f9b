"""Go's ``net`` parsers as the Kubernetes API server runs them for string formats.

``ipv4``, ``ipv6`` and ``cidr`` use ``k8s.io/utils/net``'s sloppy parsers (Go 1.16's
``net.ParseIP``/``ParseCIDR``: leading zeros allowed in IPv4 octets, any number of leading
zeros in IPv6 groups, no zones), ``mac`` uses ``net.ParseMAC``. Python's ``ipaddress``
disagrees with each of them somewhere, hence these ports.
"""

from __future__ import annotations

import re

_DEC = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_IPV4 = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)")
_H2, _H4 = "[0-9a-fA-F]{2}", "[0-9a-fA-F]{4}"
_MAC = re.compile("|".join(
    [f"{_H2}(?:{sep}{_H2}){{{n}}}" for sep in (":", "-") for n in (5, 7, 19)]
    + [rf"{_H4}(?:\.{_H4}){{{n}}}" for n in (2, 3, 9)]))


def is_ipv4_literal(s: str) -> bool:
    """Go 1.16 ``parseIPv4``: four decimal octets up to 255, leading zeros allowed."""
    m = _IPV4.fullmatch(s)
    return m is not None and all(int(octet) <= 255 for octet in m.groups())


def is_ip_sloppy(s: str) -> bool:
    """Go 1.16 ``net.ParseIP``: the first ``.`` or ``:`` says which family to parse."""
    for c in s:
        if c in ".:":
            return is_ipv4_literal(s) if c == "." else is_ipv6_literal(s)
    return False


def is_ipv6_literal(s: str) -> bool:
    """Go 1.16 ``parseIPv6`` (no zone): groups, one ``::``, an optional IPv4 tail."""
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return True
    filled, s, ellipsis = _ipv6_groups(s, ellipsis)
    return filled >= 0 and not s and (filled < 16) == (ellipsis >= 0)


def _ipv6_groups(s: str, ellipsis: int) -> tuple[int, str, int]:
    """Bytes filled (-1 on error), what is left of ``s``, and the ellipsis position."""
    i = 0
    while i < 16:
        m = _HEX.match(s)
        if not m or int(m.group(), 16) > 0xFFFF:
            return -1, s, ellipsis
        if m.end() < len(s) and s[m.end()] == ".":
            ok = (ellipsis >= 0 or i == 12) and i + 4 <= 16 and is_ipv4_literal(s)
            return (i + 4 if ok else -1), "", ellipsis
        i, s = i + 2, s[m.end():]
        if not s:
            break
        if s[0] != ":" or len(s) == 1:
            return -1, s, ellipsis
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return -1, s, ellipsis
            ellipsis, s = i, s[1:]
            if not s:
                break
    return i, s, ellipsis


def is_cidr(s: str) -> bool:
    """Go 1.16 ``net.ParseCIDR``: an address, ``/``, a decimal prefix within its length."""
    addr, slash, mask = s.partition("/")
    if not slash:
        return False
    size = 4 if is_ipv4_literal(addr) else 16 if is_ipv6_literal(addr) else 0
    return size > 0 and bool(_DEC.fullmatch(mask)) and int(mask) <= 8 * size


def is_mac(s: str) -> bool:
    """Go's ``net.ParseMAC``: 6, 8 or 20 octets as ``aa:bb..``, ``aa-bb..`` or ``aabb.ccdd..``."""
    return bool(_MAC.fullmatch(s))
