"""``pathbind_hf``'s heat maps from its own computation: attention rollout, gradient×attention, Winsor-CAM and
Integrated Gradients.

Each explains the occlusion map's target, the answer margin m = log p(reference) − max log p(other option) over the
options after the prompt (:meth:`HFAdapter.option_scores`, differentiable), and gives one value per image token,
placed on the model's patch grid and view box as its raw attention is. The attention-based methods read the chosen
tokens (the expression's, max over them as for the raw attention, or the last prompt token, which predicts the
answer). Gradients flow to the inputs only: the weights are frozen while a method runs, so no weight gradient is
kept or computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from pathbind.wire import OcclusionRequest
from pathbind_models.adapter import Attribution, layer_indices
from pathbind_models.attribution import TOKENS, AttributionSettings, NotApplicable, layer_spec
from pathbind_models.hf import probe
from pathbind_models.hf.patches import patch_token_means, pixel_token_sums
from pathbind_models.occlusion import fill_colour

Result = tuple[np.ndarray, dict[str, Any]]  # one value per image token, and what the method used and cost


@dataclass
class Target:
    """One request's prompt about one image, encoded, with the tokens whose attention is explained."""

    adapter: Any  # an HFAdapter, which calls this module: not imported back, so the two form no import circle
    image: Image.Image
    prompt: str
    inputs: dict[str, torch.Tensor]
    option_ids: list[list[int]]
    reference: int
    token: str  # which tokens were chosen (pathbind_models.attribution.TOKENS)
    rows: list[int]  # their positions
    image_positions: np.ndarray

    def margin(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """m of each prompt of ``inputs`` (equal prompts about one image each)."""
        scores = self.adapter.option_scores(inputs, self.option_ids)
        others = [k for k in range(scores.shape[1]) if k != self.reference]
        return scores[:, self.reference] - scores[:, others].max(dim=1).values


def attribute(adapter: Any, method: str, image: Image.Image, request: OcclusionRequest,
              settings: AttributionSettings) -> Attribution:
    """``method``'s map of ``request``'s margin about ``image``; ValueError for a method this module lacks."""
    if method not in METHODS:
        raise ValueError(f"{method!r} is not one of pathbind_hf's attribution methods ({', '.join(METHODS)})")
    target = _target(adapter, image, request, settings.token)
    calls: list[int] = []
    counter = adapter.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        values, notes = METHODS[method](target, request, settings)
    finally:
        counter.remove()
    attribution_map, view_box = adapter.image_token_map(image, target.inputs, values)
    return Attribution(attribution_map, view_box, {**notes, "forwards": len(calls)})


def _target(adapter: Any, image: Image.Image, request: OcclusionRequest, token: str) -> Target:
    prompt = adapter._prompt(1, request.prompt)
    inputs = adapter._encode([prompt], [[image]])
    ids = inputs["input_ids"][0].cpu().numpy()
    rows = ([len(ids) - 1] if token == "last"
            else adapter._entity_positions(prompt, ids, request.prompt, request.entity))
    return Target(adapter, image, prompt, inputs, adapter._option_ids(list(request.options)), request.reference, token,
                  rows, np.flatnonzero(ids == adapter.config.image_token_id))


@contextmanager
def _input_gradients(model: torch.nn.Module) -> Iterator[None]:
    """Autograd on, weights frozen (restored after): only activations on the way to the inputs are kept."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    for parameter in trainable:
        parameter.requires_grad_(False)
    try:
        with torch.enable_grad():
            yield
    finally:
        for parameter in trainable:
            parameter.requires_grad_(True)


def _with_pixel_gradients(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inputs with a copy of the pixels that needs a gradient, so the margin is in the autograd graph."""
    return {**inputs, "pixel_values": inputs["pixel_values"].detach().clone().requires_grad_(True)}


# --- attention rollout (Abnar & Zuidema 2020) ------------------------------------------------------------------------

def rollout(target: Target, request: OcclusionRequest, settings: AttributionSettings) -> Result:
    """Row of the chosen token in Ã_L ⋯ Ã_1, Ã_l = ½(head-mean A_l) + ½I (rows still sum to 1), over every decoder
    layer, at the image tokens. Every layer's head-mean matrix is recorded (S² per layer on the CPU, a block of rows
    at a time on the device), then multiplied from the last layer down as a vector."""
    adapter = target.adapter
    count = target.inputs["input_ids"].shape[1]
    modules = {module: i for i, module in enumerate(adapter.decoder_layers)}
    with probe.recording(list(range(count)), modules) as record, torch.inference_mode():
        adapter.model(**target.inputs)
    flow = np.zeros((len(target.rows), count))
    flow[np.arange(len(target.rows)), target.rows] = 1.0
    for layer in reversed(range(len(modules))):
        flow = 0.5 * flow @ record.rows_by_layer[layer][0].double().numpy() + 0.5 * flow
    notes = {"token": TOKENS[target.token], "layers": list(range(len(modules))), "backwards": 0}
    return flow[:, target.image_positions].max(axis=0), notes


# --- gradient × attention (Chefer, Gur & Wolf 2021) -----------------------------------------------------------------

def gradient_attention(target: Target, request: OcclusionRequest, settings: AttributionSettings) -> Result:
    """E_h[(∂m/∂A_l ⊙ A_l)⁺] at the chosen tokens' rows, mean over the chosen layers, max over the tokens. The probe
    records only those rows, in the graph (``with_graph``): ∂m/∂A of the rows, never the full matrices."""
    adapter = target.adapter
    chosen = layer_indices(layer_spec(settings.layers, len(adapter.decoder_layers)), len(adapter.decoder_layers))
    modules = {adapter.decoder_layers[i]: i for i in chosen}
    with _input_gradients(adapter.model), probe.recording(target.rows, modules, with_graph=True) as record:
        margin = target.margin(_with_pixel_gradients(target.inputs))
        weights = [record.rows_by_layer[i] for i in chosen]
        grads = torch.autograd.grad(margin.sum(), weights, allow_unused=True)
    relevance = []
    for weight, grad in zip(weights, grads, strict=True):
        if grad is None:  # the margin does not depend on this layer's rows
            relevance.append(torch.zeros(weight.shape[2], len(target.image_positions)))
            continue
        # The batch rows (one per option prefix) share the prompt's rows: their gradients add up.
        product = (grad.sum(dim=0) * weight[0]).clamp(min=0).mean(dim=0)  # (tokens, keys)
        relevance.append(product[:, torch.as_tensor(target.image_positions, device=product.device)].detach().cpu())
    values = torch.stack(relevance).mean(dim=0).max(dim=0).values.double().numpy()
    return values, {"token": TOKENS[target.token], "layers": chosen, "backwards": 1}


# --- Winsor-CAM (Wall et al. 2025) -----------------------------------------------------------------------------------

def winsor_cam(target: Target, request: OcclusionRequest, settings: AttributionSettings) -> Result:
    """Grad-CAM of every vision-tower block, combined with winsorized layer weights (Wall et al., arXiv 2507.10846,
    and their reference code ``winsorcam.py``): per block l, channel weights α_l = mean over the image's patches of
    ∂m/∂A_l, CAM_l = ReLU(A_l α_l) min–max normalised; layer weight w_l = ReLU(mean α_l), clipped at the
    ``winsor_percentile`` of the non-zero weights, the non-zero ones rescaled to [0.1, 1]; map = Σ_l w_l CAM_l,
    averaged over the patches of each image token. A mean α_l within rounding of zero counts as zero
    (:func:`_layer_weight`), and with no positive layer weight the map would be all zeros: NotApplicable instead,
    with the reason. Captum's LayerGradCam computes one layer's CAM of a classifier, neither the margin of a
    generative model nor the winsorized combination, so this is its own code."""
    adapter = target.adapter
    blocks = adapter.vision_blocks()
    captured: list[torch.Tensor] = []
    hooks = [block.register_forward_hook(lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple)
                                                                            else out)) for block in blocks]
    try:
        with _input_gradients(adapter.model):
            margin = target.margin(_with_pixel_gradients(target.inputs))
            grads = torch.autograd.grad(margin.sum(), captured, allow_unused=True)
    finally:
        for hook in hooks:
            hook.remove()
    copies = len({tuple(ids[:-1]) for ids in target.option_ids})  # the image runs once per option prefix row
    cams, weights = [], []
    for activation, grad in zip(captured, grads, strict=True):
        act = _patches(activation.detach().float().reshape(copies, -1, *activation.shape[1:])[0])
        gradient = (torch.zeros_like(act) if grad is None
                    else _patches(grad.float().reshape(copies, -1, *grad.shape[1:]).sum(dim=0)))
        alpha = gradient.reshape(-1, gradient.shape[-1]).mean(dim=0)
        cam = (act @ alpha).clamp(min=0)
        spread = cam.max() - cam.min()
        cams.append((cam - cam.min()) / spread if spread > 0 else torch.zeros_like(cam))
        weights.append(_layer_weight(alpha, gradient, activation.dtype))
    layer_weights = winsorized_weights(np.asarray(weights), settings.winsor_percentile)
    if not layer_weights.any():
        raise NotApplicable(NO_LAYER_WEIGHT if not any(weights) else "no vision block's mean channel weight is "
                            "positive, so Winsor-CAM's layer weights are all zero")
    combined = sum(float(w) * cam for w, cam in zip(layer_weights, cams, strict=True))
    patches = np.asarray(combined.cpu().double().numpy() if isinstance(combined, torch.Tensor) else combined)
    patches = adapter.natural_patch_order(patches, target.inputs)
    views = adapter.image_views(target.image, target.inputs)
    values = patch_token_means(patches, views, len(target.image_positions))
    return values, {"vision_blocks": len(blocks), "percentile": settings.winsor_percentile,
                    "layer_weights": [round(float(w), 6) for w in layer_weights], "backwards": 1}


NO_LAYER_WEIGHT = ("every vision block's mean channel weight is zero within rounding: its output reaches the answer "
                   "only through LayerNorms, whose gradient sums to zero over the channels, so Winsor-CAM's layer "
                   "weights vanish")


def _layer_weight(alpha: torch.Tensor, gradient: torch.Tensor, dtype: torch.dtype) -> float:
    """Winsor-CAM's layer weight before ReLU, mean α_l; 0 when it is within the rounding of the gradient it averages
    (its dtype's eps times the mean |gradient|). A block read only through LayerNorms, as pre-norm vision towers
    are, has Σ_c ∂m/∂A_l = 0 for every patch, so mean α_l is rounding noise whose sign would pick the layers."""
    weight = float(alpha.double().mean())
    rounding = torch.finfo(dtype).eps * float(gradient.double().abs().mean())
    return weight if abs(weight) > rounding else 0.0


def _patches(values: torch.Tensor) -> torch.Tensor:
    """A vision block's per-patch values of one image: rows (patches, D), or frames (frames, patches, D) without
    a CLS token."""
    if values.dim() == 3 and int(np.sqrt(values.shape[1])) ** 2 != values.shape[1]:
        return values[:, 1:]
    return values


def winsorized_weights(weights: np.ndarray, percentile: float) -> np.ndarray:
    """Winsor-CAM's layer weights: ReLU, non-zero weights clipped at their ``percentile`` and min–max rescaled to
    [0.1, 1] (all 1 when equal); zeros stay zero."""
    out = np.clip(np.asarray(weights, dtype=float), 0, None)
    nonzero = out > 0
    if not nonzero.any():
        return out
    out[nonzero] = np.minimum(out[nonzero], np.percentile(out[nonzero], percentile))
    low, high = out[nonzero].min(), out[nonzero].max()
    out[nonzero] = 1.0 if high == low else 0.1 + 0.9 * (out[nonzero] - low) / (high - low)
    return out


# --- Integrated Gradients (Sundararajan, Taly & Yan 2017) with Captum ------------------------------------------------

def integrated_gradients(target: Target, request: OcclusionRequest, settings: AttributionSettings) -> Result:
    """Captum's ``IntegratedGradients`` of m over the processed pixels, from those of an image of the request's fill
    colour and size (the image's mean colour, or mid-grey, the seed's baseline, with ``fill: grey``; the processor
    is affine in the pixels, so this is the straight path from that image), Gauss–Legendre with ``ig_steps`` points,
    several steps per forward; each pixel's attribution summed over the image token it falls in, the map its
    magnitude. Completeness: the attributions should sum to m(image) − m(baseline); the gap is reported."""
    from captum.attr import IntegratedGradients

    adapter = target.adapter
    pixels = target.inputs["pixel_values"]
    colour = fill_colour(target.image, request.fill)
    baseline = adapter._encode([target.prompt], [[Image.new("RGB", target.image.size, colour)]])["pixel_values"]
    encoded: dict[int, dict[str, torch.Tensor]] = {}

    def margins(batch: torch.Tensor) -> torch.Tensor:  # (k, *pixels.shape): k copies of the image's pixels
        k = batch.shape[0]
        if k not in encoded:
            encoded[k] = adapter._encode([target.prompt] * k, [[target.image]] * k)
        return target.margin({**encoded[k], "pixel_values": batch.reshape(-1, *pixels.shape[1:])})

    per_forward = adapter.images_per_backward(target.inputs["input_ids"].shape[1], target.option_ids)
    with _input_gradients(adapter.model):
        found, gap = IntegratedGradients(margins).attribute(
            pixels[None], baselines=baseline[None], n_steps=request.ig_steps, internal_batch_size=per_forward,
            return_convergence_delta=True)
    with torch.inference_mode():
        ends = margins(torch.stack([pixels, baseline])).double().cpu().numpy()
    views = adapter.image_views(target.image, target.inputs)
    values = pixel_token_sums(found[0].detach().double().cpu().numpy(), views, len(target.image_positions))
    change = float(ends[0] - ends[1])
    notes = {"steps": request.ig_steps, "baseline": list(colour), "method": "gausslegendre",
             "margin": float(ends[0]), "baseline_margin": float(ends[1]), "completeness_gap": float(gap[0]),
             "relative_gap": abs(float(gap[0])) / abs(change) if change else float("nan"),
             "steps_per_forward": per_forward, "backwards": -(-request.ig_steps // per_forward)}
    return np.abs(values), notes


Method = Callable[[Target, OcclusionRequest, AttributionSettings], Result]
METHODS: dict[str, Method] = {"rollout": rollout, "gradient_attention": gradient_attention,
                              "winsor_cam": winsor_cam, "integrated_gradients": integrated_gradients}
