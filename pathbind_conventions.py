"""The conventions PathBind's core, tasks, models and metrics share, stated once: box frames, the refusal form, the
occlusion grid and the stain colour model. numpy only, so every package can import it.
"""

from __future__ import annotations

import numpy as np

# Full scale of a box coordinate in each frame a prompt can ask boxes in; a pixel coordinate's is the image side.
BOX_CONVENTIONS = {"pixel": None, "unit": 1.0, "per_mille": 1000.0}

# The answer every PathView prompt offers for "the image cannot tell"; a trap's only safe answer.
REFUSAL_FORM = "insufficient evidence"


def cell_edges(length: int, grid: int) -> np.ndarray:
    """Pixel edges of the ``grid`` cells along a side of ``length`` pixels: cell i is pixels ``[edges[i], edges[i+1])``,
    the pixels an occlusion of that cell paints and the metrics measure.

    >>> cell_edges(10, 4).tolist()
    [0, 2, 5, 7, 10]
    """
    return (np.arange(grid + 1) * length) // grid


def _unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=float)
    return v / np.linalg.norm(v)


# The Beer-Lambert stain colour model: the demo generator renders with it, the controls unmix with it.
# Ruifrok & Johnston (2001) optical-density vectors; rows are hematoxylin, eosin, DAB. OD = C @ STAIN_MATRIX.
STAIN_MATRIX = np.stack([_unit([0.65, 0.70, 0.29]), _unit([0.07, 0.99, 0.11]), _unit([0.27, 0.57, 0.78])])
_UNMIX = np.linalg.inv(STAIN_MATRIX)


def concentrations_to_rgb(conc: np.ndarray) -> np.ndarray:
    """(..., 3) H/E/DAB concentrations to uint8 RGB = 255 exp(-C @ STAIN_MATRIX)."""
    od = np.asarray(conc, dtype=np.float32) @ STAIN_MATRIX.astype(np.float32)
    return np.clip(np.rint(255.0 * np.exp(-od)), 0, 255).astype(np.uint8)


def optical_density(rgb: np.ndarray) -> np.ndarray:
    """Optical density -ln(I / 255), with I >= 1 so black stays finite."""
    return -np.log(np.maximum(np.asarray(rgb, dtype=float), 1.0) / 255.0)


def rgb_to_concentrations(rgb: np.ndarray) -> np.ndarray:
    """Colour deconvolution: (..., 3) RGB in [0, 255] to H/E/DAB concentrations."""
    return optical_density(rgb) @ _UNMIX
