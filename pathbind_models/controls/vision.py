"""Transparent histology image analysis: stain deconvolution, nuclei segmentation, evidence maps."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from PIL import Image
from scipy import ndimage

# Ruifrok & Johnston (2001) optical-density vectors, rows H, E, DAB; OD = C @ STAIN_MATRIX.
STAIN_MATRIX = np.array([[0.65, 0.70, 0.29], [0.07, 0.99, 0.11], [0.27, 0.57, 0.78]])
STAIN_MATRIX /= np.linalg.norm(STAIN_MATRIX, axis=1, keepdims=True)
UNMIX = np.linalg.inv(STAIN_MATRIX)

GRID = 16  # evidence map is GRID x GRID patches
NUCLEAR_STAIN = 0.5  # H + DAB concentration above which a pixel is nuclear
WHITE_OD = 0.15  # summed RGB optical density below which a pixel is empty (glass, fat, lumen)
MIN_AREA, MAX_AREA = 12, 1200  # px^2: smaller is noise, larger is a confluent smear rather than one nucleus
MIN_NUCLEI = 5  # fewer segmented nuclei than this: nothing nuclear to judge
MIN_TISSUE = 0.05  # tissue fraction below this: a blank field
DAB_POSITIVE = 0.4  # mean DAB concentration of a positive nucleus
ATYPICAL_AREA, HYPERCHROMATIC = 160.0, 1.2  # an atypical nucleus is both enlarged and hyperchromatic
SPINDLE = 2.0  # major/minor axis ratio of spindle (fibroblast-like) nuclei
SMALL_AREA, LARGE_AREA = 65.0, 225.0  # mean nuclear area bounds between small / medium / large
FATTY = 0.35  # white fraction of adipose tissue
DENSE = 120  # nuclei per field of a lymphocyte-rich infiltrate
CLUSTER_LINK = 20.0  # px: atypical nuclei less than twice this apart belong to one lesion


@dataclass(frozen=True, eq=False)
class Findings:
    """What the control measured in one image (areas in px^2, fractions in [0, 1])."""

    width: int
    height: int
    tissue_fraction: float
    white_fraction: float
    nuclei_count: int
    mean_nuclear_area: float
    mean_elongation: float
    mean_nuclear_stain: float
    atypical_count: int
    dab_positive_count: int
    dab_fraction: float
    lesion_box: tuple[float, float, float, float] | None
    evidence: np.ndarray = field(repr=False)  # GRID x GRID, row-major from the top-left, max 1

    @property
    def has_tissue(self) -> bool:
        return self.tissue_fraction >= MIN_TISSUE

    @property
    def has_nuclei(self) -> bool:
        return self.has_tissue and self.nuclei_count >= MIN_NUCLEI


def _rgb(image: Image.Image | np.ndarray) -> np.ndarray:
    """Any PIL mode (RGBA is composited on white) or array as float RGB in [0, 255]."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return np.asarray(image.convert("RGB"), dtype=float)


def optical_density(rgb: np.ndarray) -> np.ndarray:
    """Beer-Lambert optical density -ln(I / 255), with I >= 1 so black stays finite."""
    return -np.log(np.maximum(np.asarray(rgb, dtype=float), 1.0) / 255.0)


def deconvolve(image: Image.Image | np.ndarray) -> np.ndarray:
    """Colour deconvolution: (H, W, 3) concentrations of hematoxylin, eosin and DAB."""
    return optical_density(_rgb(image)) @ UNMIX


def _pool(values: np.ndarray) -> np.ndarray:
    """Mean of a per-pixel map over a GRID x GRID patch grid (any image size)."""
    h, w = values.shape
    rows, cols = np.arange(h) * GRID // h, np.arange(w) * GRID // w
    index = (rows[:, None] * GRID + cols[None, :]).ravel()
    total = np.bincount(index, weights=values.ravel(), minlength=GRID * GRID)
    return (total / np.maximum(np.bincount(index, minlength=GRID * GRID), 1)).reshape(GRID, GRID)


def _normalised(grid: np.ndarray) -> np.ndarray:
    """Smooth over neighbouring patches (a lesion spans several) and scale to a maximum of 1."""
    grid = ndimage.gaussian_filter(grid, 1.0, mode="constant")
    return grid / grid.max() if grid.max() > 0 else grid


def _objects(conc: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Segment nuclei; returns the label image (0 = none) and per-nucleus measurements."""
    stain = conc[..., 0] + conc[..., 2]
    labels, n = ndimage.label(stain > NUCLEAR_STAIN)
    flat = labels.ravel()
    h, w = labels.shape
    yy, xx = np.divmod(np.arange(h * w, dtype=float), w)

    def total(weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=n + 1)[1:]

    area = total()
    safe = np.maximum(area, 1)
    cx, cy = total(xx) / safe, total(yy) / safe
    # Second moments give the axis ratio; +1/12 is a pixel's own variance, so a 1-px line is not infinite.
    sxx = total(xx * xx) / safe - cx**2 + 1 / 12
    syy = total(yy * yy) / safe - cy**2 + 1 / 12
    sxy = total(xx * yy) / safe - cx * cy
    root = np.sqrt(((sxx - syy) / 2) ** 2 + sxy**2)
    major, minor = (sxx + syy) / 2 + root, np.maximum((sxx + syy) / 2 - root, 1e-6)
    stats = {
        "area": area, "elongation": np.sqrt(major / minor),
        "stain": total(stain.ravel()) / safe, "dab": total(conc[..., 2].ravel()) / safe,
    }
    keep = (area >= MIN_AREA) & (area <= MAX_AREA)
    relabel = np.zeros(n + 1, int)
    relabel[1:][keep] = np.arange(1, keep.sum() + 1)
    return relabel[labels], {key: value[keep] for key, value in stats.items()}


def _lesion_box(labels: np.ndarray, atypical: np.ndarray) -> tuple[float, float, float, float] | None:
    """Bounding box (x0, y0, x1, y1, pixel edges) of the largest group of atypical nuclei, if >= 3."""
    if atypical.sum() < 3:
        return None
    mask = np.concatenate([[False], atypical])[labels]
    groups, _ = ndimage.label(ndimage.distance_transform_edt(~mask) < CLUSTER_LINK)
    largest = np.bincount(groups[mask]).argmax()
    rows, cols = np.nonzero(mask & (groups == largest))
    return float(cols.min()), float(rows.min()), float(cols.max() + 1), float(rows.max() + 1)


def _measure(image: Image.Image | np.ndarray) -> tuple[Findings, dict[str, np.ndarray]]:
    """Findings plus per-pixel maps: nuclei, atypia-weighted nuclei, DAB-positive nuclei, white space, nucleus count."""
    conc = deconvolve(image)
    od_sum = conc @ STAIN_MATRIX.sum(axis=1)
    white = od_sum < WHITE_OD
    labels, nuc = _objects(conc)
    atypical = (nuc["area"] >= ATYPICAL_AREA) & (nuc["stain"] >= HYPERCHROMATIC)
    positive = nuc["dab"] >= DAB_POSITIVE
    per_label = lambda values: np.concatenate([[0.0], values])[labels]  # noqa: E731
    maps = {
        "nuclei": (labels > 0).astype(float), "atypia": per_label(np.where(atypical, 1.0, 0.2)),
        "dab": per_label(positive.astype(float)), "white": white.astype(float),
        "count": per_label(1.0 / np.maximum(nuc["area"], 1)),  # each nucleus adds 1: cellularity, not nuclear area
    }
    count = len(nuc["area"])
    mean = lambda values: float(values.mean()) if count else 0.0  # noqa: E731
    findings = Findings(
        width=labels.shape[1], height=labels.shape[0], tissue_fraction=float(1 - white.mean()),
        white_fraction=float(white.mean()), nuclei_count=count, mean_nuclear_area=mean(nuc["area"]),
        mean_elongation=mean(nuc["elongation"]), mean_nuclear_stain=mean(nuc["stain"]),
        atypical_count=int(atypical.sum()), dab_positive_count=int(positive.sum()),
        dab_fraction=float(positive.mean()) if count else 0.0, lesion_box=_lesion_box(labels, atypical),
        evidence=_normalised(_pool(maps["atypia"])),
    )
    return findings, maps


def analyze(image: Image.Image | np.ndarray) -> Findings:
    """Measure tissue, nuclei, atypia, DAB positivity and white space from the pixels alone."""
    return _measure(image)[0]


def evidence_kind(query: str | None) -> str:
    """Which per-pixel map holds the evidence for ``query`` (default: atypical nuclei)."""
    q = (query or "").lower()
    if re.search(r"dab|brown|positiv|ihc|immuno", q):
        return "dab"
    if re.search(r"fat|adipo|white|vacuol|lumen|lipom", q):
        return "white"
    if re.search(r"cellular|how many|count|dens|lymph|inflamm", q):
        return "count"
    return "atypia"


def evidence_map(image: Image.Image | np.ndarray, query: str | None = None) -> np.ndarray:
    """GRID x GRID map of where the evidence for ``query`` lies (default: atypical nuclei), max 1."""
    return _normalised(_pool(_measure(image)[1][evidence_kind(query)]))


def evidence_mass(image: Image.Image | np.ndarray, query: str | None = None) -> float:
    """Mean per-pixel evidence for ``query`` over the whole image, unnormalised: every patch of evidence adds to
    it, so hiding one lowers it in proportion (what the positive control's presence answers rest on).

    Equals the mean of the map behind :func:`evidence_map`, computing only that map (it is called once per
    occluded image).
    """
    kind = evidence_kind(query)
    conc = deconvolve(image)
    if kind == "white":
        return float(np.mean(conc @ STAIN_MATRIX.sum(axis=1) < WHITE_OD))
    labels, nuc = _objects(conc)
    per_nucleus = {"atypia": np.where((nuc["area"] >= ATYPICAL_AREA) & (nuc["stain"] >= HYPERCHROMATIC), 1.0, 0.2),
                   "dab": (nuc["dab"] >= DAB_POSITIVE).astype(float), "count": 1.0 / np.maximum(nuc["area"], 1)}[kind]
    return float(np.concatenate([[0.0], per_nucleus])[labels].mean())


def describe(image: Image.Image | np.ndarray) -> str:
    """One sentence summarising the findings."""
    f = analyze(image)
    if not f.has_tissue:
        return "The image shows no stained tissue."
    lesion = "no cluster of atypical nuclei"
    if f.lesion_box is not None:
        box = ", ".join(f"{v:.0f}" for v in f.lesion_box)
        lesion = f"a cluster of atypical nuclei in the {_quadrant(f) or 'centre'} (box {box})"
    return (f"The image shows {f.nuclei_count} nuclei (mean area {f.mean_nuclear_area:.0f} px^2, axis ratio "
            f"{f.mean_elongation:.1f}, {f.atypical_count} enlarged and hyperchromatic), "
            f"{100 * f.dab_fraction:.0f}% DAB-positive, {100 * f.white_fraction:.0f}% white space and {lesion}.")


# ---------------------------------------------------------------- reading the findings


def _tissue(f: Findings) -> str | None:
    if f.has_tissue and f.white_fraction >= FATTY:
        return "adipose"
    if not f.has_nuclei:
        return None
    if f.nuclei_count >= DENSE and f.mean_nuclear_area < SMALL_AREA:
        return "lymphoid"
    if f.mean_elongation >= SPINDLE:
        return "fibrous"
    if SMALL_AREA <= f.mean_nuclear_area < LARGE_AREA and f.atypical_count == 0:
        return "epithelial"
    return None


def _nuclear_morphology(f: Findings) -> str | None:
    if not f.has_nuclei:
        return None
    if f.mean_elongation >= SPINDLE:
        return "spindle"
    if f.mean_nuclear_area < SMALL_AREA:
        return "small"
    if f.mean_nuclear_area < LARGE_AREA:
        return "medium"
    return "large" if f.mean_nuclear_stain >= HYPERCHROMATIC else None


def _diagnosis(f: Findings) -> str | None:
    if f.has_tissue and f.white_fraction >= FATTY:
        return "fatty"
    if not f.has_nuclei:
        return None
    if f.atypical_count >= MIN_NUCLEI:
        return "neoplasm"
    if f.atypical_count == 0 and f.nuclei_count >= DENSE and f.mean_nuclear_area < SMALL_AREA:
        return "inflammation"
    if f.atypical_count == 0 and f.nuclei_count < DENSE:
        return "normal"
    return None


def _quadrant(f: Findings) -> str | None:
    """Quadrant of the lesion centre; None without a lesion or when it straddles a midline."""
    if f.lesion_box is None:
        return None
    x = (f.lesion_box[0] + f.lesion_box[2]) / 2 / f.width
    y = (f.lesion_box[1] + f.lesion_box[3]) / 2 / f.height
    if min(abs(x - 0.5), abs(y - 0.5)) < 0.05:
        return None
    return f"{'upper' if y < 0.5 else 'lower'} {'left' if x < 0.5 else 'right'}"


# Keywords that identify an option with a finding; each finding must match exactly one option.
_KEYWORDS = {
    "adipose": ("adipose", "fat"), "lymphoid": ("lymph",), "fibrous": ("fibrous", "fibro"), "epithelial": ("epitheli",),
    "small": ("small",), "spindle": ("spindle", "elongated"), "medium": ("medium",),
    "large": ("large", "pleomorph", "hyperchromat"),
    "fatty": ("fat", "lipom", "adipose"), "inflammation": ("inflamm",), "normal": ("normal",),
    "neoplasm": ("neoplas", "malignan", "tumour", "tumor", "carcinoma", "cancer"),
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _match_keywords(options: list[str], finding: str | None) -> int | None:
    if finding is None:
        return None
    hits = [i for i, option in enumerate(options) if any(k in option.lower() for k in _KEYWORDS[finding])]
    return hits[0] if len(hits) == 1 else None


def _match_quadrant(options: list[str], quadrant: str | None) -> int | None:
    if quadrant is None:
        return None
    vertical, horizontal = quadrant.split()
    synonyms = {"upper": ("upper", "top"), "lower": ("lower", "bottom"), "left": ("left",), "right": ("right",)}
    hits = [i for i, option in enumerate(options)
            if any(w in option.lower() for w in synonyms[vertical])
            and any(w in option.lower() for w in synonyms[horizontal])]
    return hits[0] if len(hits) == 1 else None


def _interval(option: str) -> tuple[float, float] | None:
    """The numeric range an option states ("under 5%", "30 to 90 nuclei", "more than 180"); % becomes a fraction."""
    text = option.lower()
    numbers = [float(n) / (100 if "%" in text else 1) for n in _NUMBER.findall(text)]
    if len(numbers) == 2:
        return min(numbers), max(numbers)
    if len(numbers) == 1 and re.search(r"under|less|fewer|below|<|up to", text):
        return -np.inf, numbers[0]
    if len(numbers) == 1 and re.search(r"over|more|above|greater|>|at least", text):
        return numbers[0], np.inf
    return None


def _match_number(options: list[str], value: float | None) -> int | None:
    if value is None:
        return None
    ranges = [_interval(option) for option in options]
    hits = [i for i, r in enumerate(ranges) if r is not None and r[0] <= value < r[1]]
    return hits[0] if len(hits) == 1 else None


def answer_choice(question: str, options: list[str], image: Image.Image | np.ndarray) -> int | None:
    """Index of the option the pixels support for a recognised question family, else None (never a guess)."""
    q = question.lower()
    f = analyze(image)
    if "quadrant" in q:
        return _match_quadrant(options, _quadrant(f))
    if re.search(r"dab|brown", q) and re.search(r"proportion|fraction|percent|share", q):
        return _match_number(options, f.dab_fraction if f.nuclei_count >= 2 * MIN_NUCLEI else None)
    if "diagnos" in q:
        return _match_keywords(options, _diagnosis(f))
    if "cellular" in q or "how many nuclei" in q:
        return _match_number(options, float(f.nuclei_count) if f.has_nuclei else None)
    if "tissue" in q:
        return _match_keywords(options, _tissue(f))
    if "nucle" in q:
        return _match_keywords(options, _nuclear_morphology(f))
    return None


def answer_yes_no(question: str, image: Image.Image | np.ndarray) -> bool | None:
    """Yes/no for a recognised question family, else None; also None when the image cannot settle it."""
    q = question.lower()
    f = analyze(image)
    if re.search(r"dab|brown|positiv", q):
        if f.nuclei_count < 2 * MIN_NUCLEI:
            return None
        if f.dab_positive_count >= 2 and f.dab_fraction >= 0.05:
            return True
        return False if f.dab_positive_count == 0 else None
    if re.search(r"atypi|cluster|lesion|tumou?r|neoplas", q):
        if f.atypical_count >= 3:
            return True
        return False if f.has_nuclei and f.atypical_count == 0 else None
    return None


__all__ = [
    "STAIN_MATRIX", "Findings", "analyze", "answer_choice", "answer_yes_no", "deconvolve", "describe",
    "evidence_kind", "evidence_map", "evidence_mass", "optical_density",
]
