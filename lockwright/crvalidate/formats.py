"""The string formats the Kubernetes API server checks in custom resources.

apiextensions-apiserver keeps only the formats it recognises (``supportedVersionedFormats``;
names compared without ``-``) and drops every other one from the schema before validating,
so ``int32`` or ``double`` check nothing. Each recognised format is checked here as
kube-openapi's ``strfmt`` does. A check answers ``True`` (valid), ``False`` (invalid) or
``None``: the value is outside what this port reproduces exactly (``email`` and ``uri``
beyond their plain forms, ``hostname`` being exact already), and the caller must fail closed.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable
from datetime import date

from lockwright.crvalidate.netfmt import is_cidr, is_ip_sloppy, is_mac

Check = Callable[[str], bool | None]

RECOGNIZED: frozenset[str] = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid",
    "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor",
    "rgbcolor", "byte", "password", "date", "duration", "datetime", "k8sshortname",
    "k8slongname",
})


def normalize(name: str) -> str:
    """strfmt's name normalisation: ``date-time`` is ``datetime``."""
    return name.replace("-", "")


def recognized(name: str) -> bool:
    """Whether Kubernetes checks strings of this format (else it ignores the format)."""
    return normalize(name) in RECOGNIZED


def check(name: str, value: str) -> bool | None:
    """Is ``value`` valid for format ``name``? ``None``: cannot tell here (fail closed)."""
    fn = _CHECKS.get(normalize(name))
    return True if fn is None else fn(value)


_UUID = r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?%s[0-9a-f]{3}-?%s[0-9a-f]{3}-?[0-9a-f]{12}"
_ANY_HEX, _VARIANT = "[0-9a-f]", "[89ab]"
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|"
                     r"[A-Za-z0-9+/]{4})")
_OCTET = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])"
_SP = r"[\t\n\f\r ]*"
_RGB = re.compile(rf"rgb\({_SP}{_OCTET}{_SP},{_SP}{_OCTET}{_SP},{_SP}{_OCTET}{_SP}\)")
_SHORT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_CARD = re.compile(r"4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|"
                   r"3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})"
                   r"[0-9]{11}")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


def _regex(pattern: str | re.Pattern[str]) -> Check:
    rx = re.compile(pattern)
    return lambda v: rx.fullmatch(v) is not None


def _is_date(v: str) -> bool:
    """Go's ``time.Parse("2006-01-02")``: fixed widths, a real day of a real month."""
    m = _DATE.fullmatch(v)
    try:
        year, month, day = map(int, m.groups()) if m else (0, 0, 0)
        # Go knows a year 0 (a leap year, like 2000); Python's date does not
        return bool(m) and date(year or 2000, month, day) is not None
    except ValueError:
        return False


def _is_datetime(v: str) -> bool:
    """strfmt's ``IsDateTime``: a date, ``T``, ``hh:mm:ss[.frac]`` and ``Z`` or ``±hh:mm``."""
    if len(v) < 4:
        return False
    parts = v.lower().split("t")
    m = _TIME.fullmatch(parts[1]) if len(parts) >= 2 and _is_date(parts[0]) else None
    if m is None:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


_GO_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9,
             "m": 60 * 10**9, "h": 3600 * 10**9}
_GO_PART = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h)"
_GO_DURATION = re.compile(rf"[-+]?(?:0|(?:{_GO_PART})+)")
_GO_PARTS = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)")
_UNITS = [("ns", "nano"), ("us", "µs", "micro"), ("ms", "milli"), ("s", "sec"),
          ("m", "min"), ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week")]
_UNIT_MATCH = re.compile(r"([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+)")


def _is_duration(v: str) -> bool:
    """strfmt's ``ParseDuration``: Go's ``time.ParseDuration``, else any ``<n> <unit>``
    anywhere in the string (``5 days``, ``3 wk``) with a unit strfmt knows."""
    if _GO_DURATION.fullmatch(v) and _go_fits(v):
        return True
    found = _UNIT_MATCH.findall(v)
    # strconv.Atoi failing on one number fails the whole parse
    return all(int(n) < 2**63 for n, _ in found) and \
        any(_known_unit(unit.lower()) for _, unit in found)


def _go_fits(v: str) -> bool:
    """``time.ParseDuration`` refuses more than 2^63-1 nanoseconds."""
    total = sum(float(n or 0) * _GO_UNITS[u] for n, u in _GO_PARTS.findall(v.lstrip("+-")))
    return total < 2**63


def _known_unit(unit: str) -> bool:
    # the last spelling of a unit matches as a prefix ("seconds"), the others exactly
    return any(unit == u or (i == len(us) - 1 and unit.startswith(u))
               for us in _UNITS for i, u in enumerate(us))


def _is_byte(v: str) -> bool:
    """govalidator's ``IsBase64``: padded standard base64, at least one quantum."""
    return _BASE64.fullmatch(v) is not None


def _hostname_runes(v: str) -> str:
    # Go's pattern uses \p{L} and \p{S}: map every other rune onto an ASCII stand-in
    return "".join(c if c.isascii() else "a" if unicodedata.category(c)[0] == "L"
                   else "$" if unicodedata.category(c)[0] == "S" else "_" for c in v)


_H = r"a-zA-Z0-9$+<=>^`|~"  # ASCII letters, digits and the ASCII runes of \p{S}
_HOSTNAME = re.compile(rf"([{_H}]((-?[{_H}]{{0,62}})?)|([{_H}](([{_H}-]{{0,61}}[{_H}])?)"
                       rf"(\.)){{1,}}([a-zA-Z]){{2,63}})")


def _is_hostname(v: str) -> bool:
    """strfmt's ``IsHostname``: its pattern, at most 255 bytes, labels of at most 63."""
    raw = v.encode()
    return _HOSTNAME.fullmatch(_hostname_runes(v)) is not None and len(raw) <= 255 and \
        all(len(p) <= 63 for p in raw.split(b"."))


def _is_ipv6(v: str) -> bool:
    """govalidator's ``IsIPv6``: today's ``net.ParseIP`` (strict) and a colon."""
    try:
        ipaddress.IPv6Address(v)
    except ValueError:
        return False
    return ":" in v and "%" not in v


_DOT_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_PLAIN_EMAIL = re.compile(f"{_DOT_ATOM}@{_DOT_ATOM}")


def _is_email(v: str) -> bool | None:
    """``net/mail.ParseAddress``: plain ``local@domain`` passes, no ``@`` fails, the
    rest (display names, quoting, comments) is not reproduced here."""
    if _PLAIN_EMAIL.fullmatch(v):
        return True
    return False if "@" not in v else None


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_PLAIN_AUTHORITY = re.compile(r"//[A-Za-z0-9.-]*(?::[0-9]*)?(?=/|\?|$)")
_BAD_ESCAPE = re.compile(r"%(?![0-9a-fA-F]{2})")


def _is_uri(v: str) -> bool | None:
    """``net/url.ParseRequestURI``: an absolute URI or an absolute path; ``None`` for
    authorities beyond ``host[:port]``, which this port does not parse."""
    if not v or any(ord(c) < 0x20 or ord(c) == 0x7F for c in v):
        return False
    if v == "*":
        return True
    m = _SCHEME.match(v)
    rest = v[m.end():] if m else v
    if not rest.startswith("/"):
        return m is not None  # scheme:opaque passes; a relative path fails
    if m and rest.startswith("//"):
        authority = _PLAIN_AUTHORITY.match(rest)
        if not authority:
            return None
        rest = rest[authority.end():]
    return _BAD_ESCAPE.search(rest.partition("?")[0]) is None


def _is_isbn10(v: str) -> bool:
    s = re.sub(r"[\t\n\f\r -]+", "", v)
    if not re.fullmatch(r"[0-9]{9}X|[0-9]{10}", s):
        return False
    last = 10 if s[9] == "X" else int(s[9])
    return (sum((i + 1) * int(s[i]) for i in range(9)) + 10 * last) % 11 == 0


def _is_isbn13(v: str) -> bool:
    s = re.sub(r"[\t\n\f\r -]+", "", v)
    if not re.fullmatch(r"[0-9]{13}", s):
        return False
    total = sum((1, 3)[i % 2] * int(s[i]) for i in range(12))
    return int(s[12]) == (10 - total % 10) % 10


def _is_creditcard(v: str) -> bool:
    s = re.sub(r"[^0-9]+", "", v)
    if not _CARD.fullmatch(s):
        return False
    digits = [int(c) for c in reversed(s)]
    return sum(d if i % 2 == 0 else (2 * d if d < 5 else 2 * d - 9)
               for i, d in enumerate(digits)) % 10 == 0


_CHECKS: dict[str, Check] = {
    "bsonobjectid": _regex(r"[0-9a-fA-F]{24}"), "uri": _is_uri, "email": _is_email,
    "hostname": _is_hostname, "ipv4": lambda v: is_ip_sloppy(v) and "." in v,
    "ipv6": _is_ipv6, "cidr": is_cidr, "mac": is_mac,
    "uuid": _regex(_UUID % (_ANY_HEX, _ANY_HEX)), "uuid3": _regex(_UUID % ("3", _ANY_HEX)),
    "uuid4": _regex(_UUID % ("4", _VARIANT)), "uuid5": _regex(_UUID % ("5", _VARIANT)),
    "isbn": lambda v: _is_isbn10(v) or _is_isbn13(v), "isbn10": _is_isbn10,
    "isbn13": _is_isbn13, "creditcard": _is_creditcard,
    "ssn": lambda v: len(v) == 11 and re.fullmatch(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}", v)
    is not None,
    "hexcolor": _regex(r"#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})"), "rgbcolor": _regex(_RGB),
    "byte": _is_byte, "password": lambda v: True, "date": _is_date,
    "duration": _is_duration, "datetime": _is_datetime,
    "k8sshortname": lambda v: len(v) <= 63 and re.fullmatch(_SHORT, v) is not None,
    "k8slongname": lambda v: len(v) <= 253 and
    re.fullmatch(rf"{_SHORT}(\.{_SHORT})*", v) is not None,
}
