"""TCGA barcodes inside slide ids, paths and file names: case = first three fields, TSS = the second."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

IdKind = Literal["tcga", "malformed", "unknown"]

# Matched on the upper-cased id at each "TCGA-" that follows a non-alphanumeric character (or opens the id);
# the participant field must end at one too. So ".../TCGA-BH-A0BS-01Z-00-DX1.<uuid>.svs" and
# "tcga-bh-a0bs_x20.png" hold case TCGA-BH-A0BS, while "TCGA-BH-A0BSX" holds none.
_BARCODE = re.compile(r"TCGA-([A-Z0-9]{2})-[A-Z0-9]{4}(?:-[A-Z0-9]+)*(?![A-Z0-9])")
# The text of a barcode attempt that does not parse, for the reason given.
_ATTEMPT = re.compile(r"TCGA-[^\s/\\.,;:'\"]*", re.I)
_FIELD = re.compile(r"[A-Z0-9]+", re.I)


class Barcode(NamedTuple):
    """The TCGA identity of one slide id."""

    case: str  # upper-case "TCGA-BH-A0BS"
    tss: str  # upper-case tissue source site, "BH"
    raw: str  # the barcode as written in the id, e.g. "tcga-bh-a0bs-01Z-00-DX1"


def parse_barcode(text: str) -> Barcode | None:
    """The TCGA barcode inside ``text`` (any case), or None when it holds none or several different cases.

    Examples
    --------
    >>> parse_barcode("/data/brca/TCGA-BH-A0BS-01Z-00-DX1.2F0D1F6B-7A31-4C55.svs")
    Barcode(case='TCGA-BH-A0BS', tss='BH', raw='TCGA-BH-A0BS-01Z-00-DX1')
    >>> parse_barcode("tcga-bh-a0bs").case
    'TCGA-BH-A0BS'
    >>> parse_barcode("TCGA-BH") is None
    True
    """
    return classify(text)[1]


def classify(text: str) -> tuple[IdKind, Barcode | None, str]:
    """Sort an id into ``("tcga", barcode, "")``, ``("malformed", None, reason)`` or ``("unknown", None, "")``.

    Malformed ids start like a TCGA barcode (``TCGA-``) but their fields do not parse: the TSS must be
    2 letters/digits and the participant 4. Unknown ids carry no TCGA barcode at all.

    Examples
    --------
    >>> classify("TCGA-B!-A0BS-01Z")
    ('malformed', None, "TSS 'B!' in 'TCGA-B!-A0BS-01Z' is not 2 letters/digits")
    >>> classify("CPTAC-C3L-00001")
    ('unknown', None, '')
    """
    # Positions in the upper-cased copy are positions in the id: non-ASCII characters become one "?" each.
    upper = (text if text.isascii() else text.encode("ascii", "replace").decode("ascii")).upper()
    barcodes, attempt = [], -1
    start = upper.find("TCGA-")  # a literal scan first: most ids are read at C speed
    while start >= 0:
        if start == 0 or not upper[start - 1].isalnum():
            match = _BARCODE.match(upper, start)
            if match:
                barcodes.append(Barcode(match[0][:12], match[1], text[start:match.end()]))
            elif attempt < 0:
                attempt = start
        start = upper.find("TCGA-", start + 5)
    if barcodes:
        cases = sorted({b.case for b in barcodes}) if len(barcodes) > 1 else [barcodes[0].case]
        if len(cases) > 1:  # a path naming two patients is ambiguous
            return "malformed", None, f"holds several TCGA cases ({', '.join(cases)})"
        return "tcga", barcodes[-1], ""  # the last is the file name's in a path
    if attempt >= 0:
        return "malformed", None, _why_not(_ATTEMPT.match(text, attempt)[0])  # type: ignore[index]
    return "unknown", None, ""


def _why_not(token: str) -> str:
    fields = token.split("-")
    tss = fields[1] if len(fields) > 1 else ""
    participant = fields[2] if len(fields) > 2 else ""
    if len(tss) != 2 or not _FIELD.fullmatch(tss):
        return f"TSS {tss!r} in {token!r} is not 2 letters/digits"
    if not participant:
        return f"{token!r} has no participant field (expected TCGA-<TSS>-<participant>)"
    return f"participant {participant!r} in {token!r} is not 4 letters/digits"


# File suffixes a slide id may carry (whole-slide formats, tiles, feature files), stripped from non-TCGA ids.
SLIDE_SUFFIXES = frozenset({".svs", ".tif", ".tiff", ".ndpi", ".mrxs", ".scn", ".vms", ".vmu", ".bif", ".czi",
                            ".dcm", ".isyntax", ".qptiff", ".png", ".jpg", ".jpeg", ".h5", ".hdf5", ".pt", ".npy",
                            ".gz"})
_SEPARATORS = re.compile(r"[/\\]")


def slide_key(text: str) -> str:
    """One slide's identity, whatever the spelling: its TCGA barcode upper-cased (without the path, the UUID and
    the file suffix around it), else the file name without folders and slide or feature suffixes, case-folded.

    Examples
    --------
    >>> slide_key("/data/brca/tcga-bh-a0bs-01z-00-dx1.2F0D1F6B-7A31-4C55.svs")
    'TCGA-BH-A0BS-01Z-00-DX1'
    >>> slide_key(r"D:\\scans\\Slide_007.SVS") == slide_key("slide_007")
    True
    """
    barcode = parse_barcode(text)
    if barcode is not None:
        return barcode.raw.upper()
    name = _SEPARATORS.split(text.strip())[-1].strip()
    stem, dot, suffix = name.rpartition(".")
    while dot and stem and f".{suffix.lower()}" in SLIDE_SUFFIXES:
        name = stem
        stem, dot, suffix = name.rpartition(".")
    return name.casefold()


def within(short: str, long: str) -> bool:
    """Whether slide key ``short`` names a prefix of ``long``'s barcode fields ("TCGA-BH-A0BS" of
    "TCGA-BH-A0BS-01Z-00-DX1"): it may be the same slide, written without its suffix.

    Examples
    --------
    >>> within("TCGA-BH-A0BS-01Z", "TCGA-BH-A0BS-01Z-00-DX1"), within("TCGA-BH-A0BS-01Z", "TCGA-BH-A0BS-01ZZ")
    (True, False)
    """
    return long.startswith(short + "-") and short.startswith("TCGA-")
