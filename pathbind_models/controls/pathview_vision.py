"""What the positive control measures for PathView: classified nuclei at high power, lesions and organ
architecture at low power. Every reading returns None when the field of view cannot settle it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from PIL import Image
from scipy import ndimage

from pathbind_conventions import STAIN_MATRIX
from pathbind_models.controls import vision

RESOLVED = 0.7  # mean H + DAB of a resolved nucleus; nuclei blurred into low-power haze stay near 0.5
LESION_STAIN = 0.45  # hematoxylin of a low-power tumour lesion (stroma ~0.16)
MIN_LESION_AREA = 50  # px: smaller dark specks are not a lesion
ORGAN_FRAGMENT = 0.15  # a tissue fragment covering less of the image shows no organ architecture
LYMPH_NODE_STAIN = 0.4  # mean hematoxylin of a lymph node at low power
FAT_HOLE, CRYPT_HOLE, MIN_HOLES = 100.0, 60.0, 8  # px^2 mean hole area: fat vacuoles (breast), crypt lumina (colon)
EPIDERMIS_STAIN, EPIDERMIS_DEPTH = 0.6, 10.0  # a dark band within this many px of the tissue edge (skin)
FIELD = 256 * 256  # densities are per 256 x 256 field, as vision's thresholds
MIDLINE = 0.05  # a centre this close (fraction of the side) to a midline has no quadrant


@dataclass(frozen=True)
class Cells:
    """Resolved nuclei of one field: kind (a canonical label or ""), pixel box and centre of each."""

    kinds: np.ndarray
    boxes: np.ndarray  # (n, 4) [x_min, y_min, x_max, y_max], pixel edges
    centres: np.ndarray  # (n, 2) x, y
    white_fraction: float
    area: int

    def count(self, kind: str) -> int:
        return int((self.kinds == kind).sum())

    @property
    def cellular(self) -> bool:
        """A high-power field: enough resolved nuclei to read."""
        return len(self.kinds) >= vision.MIN_NUCLEI


def cells(image: Image.Image | np.ndarray) -> Cells:
    """Segment and classify the resolved nuclei: neoplastic (enlarged and hyperchromatic), fibroblast
    (spindle), lymphocyte (small); other resolved nuclei have kind ""."""
    conc = vision.deconvolve(image)
    labels, nuc = vision._objects(conc)
    slices = ndimage.find_objects(labels)
    boxes = np.array([[s[1].start, s[0].start, s[1].stop, s[0].stop] for s in slices], float).reshape(-1, 4)
    kinds = np.select([(nuc["area"] >= vision.ATYPICAL_AREA) & (nuc["stain"] >= vision.HYPERCHROMATIC),
                       nuc["elongation"] >= vision.SPINDLE, nuc["area"] < vision.SMALL_AREA],
                      ["neoplastic cell", "fibroblast", "lymphocyte"], "")
    resolved = nuc["stain"] >= RESOLVED
    white = conc @ STAIN_MATRIX.sum(axis=1) < vision.WHITE_OD
    return Cells(kinds[resolved], boxes[resolved], (boxes[resolved, :2] + boxes[resolved, 2:]) / 2,
                 float(white.mean()), int(white.size))


def tissue_type(field: Cells) -> str | None:
    """The region's tissue: adipose tissue, tumor, lymphocytic infiltrate or stroma, from its nuclei and fat."""
    if field.white_fraction >= vision.FATTY:
        return "adipose tissue"
    n = len(field.kinds)
    if not n:
        return None
    if field.count("neoplastic cell") >= max(3, n / 2):
        return "tumor"
    if field.count("lymphocyte") >= n / 2 and n * FIELD / field.area >= vision.DENSE:
        return "lymphocytic infiltrate"
    return "stroma" if field.count("fibroblast") >= n / 2 else None


def entities(field: Cells) -> list[str]:
    """Every entity the field shows: its tissue and each kind of nucleus it holds at least three of."""
    found = [label for label in [tissue_type(field)] if label]
    if field.white_fraction >= vision.FATTY:
        found.append("adipocyte")
    found += [kind for kind in ("neoplastic cell", "fibroblast", "lymphocyte") if field.count(kind) >= 3]
    if field.count("fibroblast") >= 3:
        found.append("stroma")
    return list(dict.fromkeys(found))


def quadrant(x: float, y: float, width: int, height: int) -> str | None:
    """The quadrant of a point ("upper left", ...); None near a midline."""
    if min(abs(x / width - 0.5), abs(y / height - 0.5)) < MIDLINE:
        return None
    return f"{'upper' if y < height / 2 else 'lower'} {'left' if x < width / 2 else 'right'}"


@dataclass(frozen=True)
class Slide:
    """A low-power overview: its tissue mask, hematoxylin and eosin maps, and its tumour lesion mask."""

    tissue: np.ndarray
    hematoxylin: np.ndarray
    eosin: np.ndarray

    @cached_property
    def lesion(self) -> np.ndarray:
        """Tumour lesions: dark hematoxylin areas of at least MIN_LESION_AREA px within the tissue."""
        dark = ndimage.binary_opening(self.tissue & (self.hematoxylin >= LESION_STAIN), iterations=2)
        labels, n = ndimage.label(dark)
        sizes = np.bincount(labels.ravel(), minlength=n + 1)
        return np.isin(labels, np.flatnonzero(sizes >= MIN_LESION_AREA)) & (labels > 0)

    def lesion_boxes(self) -> list[list[float]]:
        labels, _ = ndimage.label(self.lesion)
        return [[float(s[1].start), float(s[0].start), float(s[1].stop), float(s[0].stop)]
                for s in ndimage.find_objects(labels)]

    def lesion_fraction(self) -> float | None:
        return float(self.lesion.sum() / self.tissue.sum()) if self.tissue.any() else None

    def lesion_quadrant(self) -> str | None:
        rows, cols = np.nonzero(self.lesion)
        if not rows.size:
            return None
        return quadrant(cols.mean() + 0.5, rows.mean() + 0.5, self.tissue.shape[1], self.tissue.shape[0])

    def lesion_kind(self, box: list[float]) -> str | None:
        """What fills the middle half of a pixel box: adipose tissue, tumor, hemorrhage or necrosis."""
        x0, y0, x1, y1 = box
        dx, dy = (x1 - x0) / 4, (y1 - y0) / 4
        rows = slice(max(int(y0 + dy), 0), max(int(np.ceil(y1 - dy)), 1))
        cols = slice(max(int(x0 + dx), 0), max(int(np.ceil(x1 - dx)), 1))
        tissue, h, e = self.tissue[rows, cols], self.hematoxylin[rows, cols], self.eosin[rows, cols]
        if not tissue.size:
            return None
        if 1 - tissue.mean() >= vision.FATTY:
            return "adipose tissue"
        if h.mean() >= LESION_STAIN:
            return "tumor"
        if e.mean() >= 0.8:
            return "hemorrhage"
        return "necrosis" if h.mean() + e.mean() < 0.35 else None

    def organ(self) -> str | None:
        """The organ its architecture shows: lymph node, breast, colon or skin; None without a large fragment."""
        closed = ndimage.binary_fill_holes(ndimage.binary_closing(self.tissue, iterations=2))
        labels, n = ndimage.label(closed)
        if not n:
            return None
        fragment = labels == np.bincount(labels.ravel())[1:].argmax() + 1
        if fragment.mean() < ORGAN_FRAGMENT:
            return None
        if self.hematoxylin[fragment & self.tissue].mean() >= LYMPH_NODE_STAIN:
            return "lymph node"
        holes, n_holes = ndimage.label(fragment & ~self.tissue)
        mean_hole = float(np.bincount(holes.ravel())[1:].mean()) if n_holes else 0.0
        if n_holes >= MIN_HOLES and mean_hole >= FAT_HOLE:
            return "breast"
        if n_holes >= MIN_HOLES and mean_hole <= CRYPT_HOLE:
            return "colon"
        dark = fragment & (self.hematoxylin >= EPIDERMIS_STAIN)
        rim = ndimage.distance_transform_edt(fragment) <= EPIDERMIS_DEPTH
        if dark.sum() >= 0.01 * fragment.sum() and (dark & rim).sum() >= 0.8 * dark.sum():
            return "skin"
        return None


def slide(image: Image.Image | np.ndarray) -> Slide:
    """The overview's tissue (anything not white) and stain maps."""
    conc = vision.deconvolve(image)
    tissue = conc @ STAIN_MATRIX.sum(axis=1) >= vision.WHITE_OD
    return Slide(tissue, conc[..., 0], conc[..., 1])
