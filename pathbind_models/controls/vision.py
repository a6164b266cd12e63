"""Transparent histology image analysis: stain deconvolution, nuclei segmentation, evidence maps."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from PIL import Image
from scipy import ndimage

from pathbind_conventions import STAIN_MATRIX, rgb_to_concentrations

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

    @property
    def lesion_quadrant(self) -> str | None:
        """Quadrant of the lesion centre; None without a lesion or when it straddles a midline."""
        if self.lesion_box is None:
            return None
        x = (self.lesion_box[0] + self.lesion_box[2]) / 2 / self.width
        y = (self.lesion_box[1] + self.lesion_box[3]) / 2 / self.height
        if min(abs(x - 0.5), abs(y - 0.5)) < 0.05:
            return None
        return f"{'upper' if y < 0.5 else 'lower'} {'left' if x < 0.5 else 'right'}"


def _rgb(image: Image.Image | np.ndarray) -> np.ndarray:
    """Any PIL mode (RGBA is composited on white) or array as float RGB in [0, 255]."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return np.asarray(image.convert("RGB"), dtype=float)


def deconvolve(image: Image.Image | np.ndarray) -> np.ndarray:
    """Colour deconvolution: (H, W, 3) concentrations of hematoxylin, eosin and DAB."""
    return rgb_to_concentrations(_rgb(image))


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
        lesion = f"a cluster of atypical nuclei in the {f.lesion_quadrant or 'centre'} (box {box})"
    return (f"The image shows {f.nuclei_count} nuclei (mean area {f.mean_nuclear_area:.0f} px^2, axis ratio "
            f"{f.mean_elongation:.1f}, {f.atypical_count} enlarged and hyperchromatic), "
            f"{100 * f.dab_fraction:.0f}% DAB-positive, {100 * f.white_fraction:.0f}% white space and {lesion}.")


__all__ = [
    "Findings", "analyze", "deconvolve", "describe", "evidence_kind", "evidence_map", "evidence_mass",
]
