"""The attribution methods against independent computations on tiny checkpoints: rollout and gradient×attention
against eager attention matrices, Integrated Gradients against a hand integral (and its completeness), RISE against
a brute-force average, Winsor-CAM's layer weights against the reference code's rule and its map against a hand
Grad-CAM laid out as the image, controls without gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from pathbind.wire import OcclusionRequest
from pathbind_models.attribution import METHODS, AttributionSettings, NotApplicable
from pathbind_models.controls.blind import BlindControl
from pathbind_models.controls.positive import PositiveControl
from pathbind_models.hf import attribution as hf
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.patches import pixel_token_sums
from pathbind_models.occlusion import answer
from pathbind_models.rise import KEEP, cell_means, rise_map, smooth_mask

QUESTION = "Is there nuclei with prominent nucleoli in this image? Answer Yes or No."
ENTITY = "nuclei with prominent nucleoli"


def noise(seed: int = 0, size: int = 224) -> Image.Image:
    return Image.fromarray((np.random.default_rng(seed).random((size, size, 3)) * 255).astype("uint8"))


def request(answers: tuple[str, ...] = ("Yes", "No"), **options) -> OcclusionRequest:
    return OcclusionRequest(QUESTION, answers, 0, entity=ENTITY, grid=8, steps=4, **options)


@pytest.fixture(scope="module", params=["qwen2_vl", "llava"])
def adapter(request, tiny_model) -> HFAdapter:
    return HFAdapter(str(tiny_model(request.param)))


def eager_model(adapter: HFAdapter):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(adapter.pretrained, attn_implementation="eager").eval()


@pytest.mark.parametrize("token", ["expression", "last"])
def test_rollout_equals_the_product_of_eager_attention_matrices(adapter, token):
    """Row of the chosen tokens in Ã_L ⋯ Ã_1 (Ã = ½ head-mean A + ½ I) from eager output_attentions, at the image
    tokens, max over the tokens."""
    target = hf._target(adapter, noise(), request(), token)
    values, notes = hf.rollout(target, request(), AttributionSettings())
    with torch.inference_mode():
        weights = eager_model(adapter)(**target.inputs, output_attentions=True).attentions
    size = target.inputs["input_ids"].shape[1]
    product = torch.eye(size, dtype=torch.float64)
    for layer in weights:
        product = (0.5 * layer[0].double().mean(dim=0) + 0.5 * torch.eye(size, dtype=torch.float64)) @ product
    expected = product[target.rows][:, target.image_positions].max(dim=0).values.numpy()
    assert np.abs(values - expected).max() <= 1e-6 * max(1.0, np.abs(expected).max())
    assert notes["layers"] == list(range(len(weights)))


@pytest.mark.parametrize("token", ["expression", "last"])
def test_gradient_attention_equals_eager_gradients(adapter, token):
    """E_h[(∂m/∂A ⊙ A)⁺] of the chosen rows, from autograd through eager attention matrices (the probe never
    materialises them), mean over the middle layers, max over the tokens."""
    # Two options of one token each: the margin is read at the last prompt position alone.
    letters = tuple(o for o in ("A", "B", "C", "D", "1", "2") if len(adapter._option_ids([o])[0]) == 1)[:2]
    (yes,), (no,) = adapter._option_ids(list(letters))
    settings = AttributionSettings(token=token, layers="all")
    target = hf._target(adapter, noise(1), request(letters), token)
    values, notes = hf.gradient_attention(target, request(letters), settings)
    inputs = {**target.inputs, "pixel_values": target.inputs["pixel_values"].clone().requires_grad_(True)}
    output = eager_model(adapter)(**inputs, output_attentions=True)
    logprobs = output.logits[0, -1].float().log_softmax(dim=-1)
    grads = torch.autograd.grad(logprobs[yes] - logprobs[no], output.attentions)
    relevance = [(g[0] * a[0]).clamp(min=0).mean(dim=0)[target.rows][:, target.image_positions]
                 for g, a in zip(grads, output.attentions, strict=True)]
    expected = torch.stack(relevance).mean(dim=0).max(dim=0).values.detach().double().numpy()
    assert expected.max() > 0
    assert np.abs(values - expected).max() <= 1e-4 * expected.max()
    assert notes["layers"] == list(range(len(output.attentions))) and notes["backwards"] == 1


def test_integrated_gradients_equals_a_hand_integral_and_is_complete(adapter):
    """Captum's IG per image token equals a 128-point midpoint integral of ∂m/∂pixels from the mid-grey image
    (``fill: grey``, the seed's baseline; taken by hand with autograd); the attributions sum to m(image) − m(grey)
    within 5%."""
    image = noise(2)
    target = hf._target(adapter, image, request(), "expression")
    values, notes = hf.integrated_gradients(target, request(ig_steps=64, fill="grey"), AttributionSettings())
    pixels = target.inputs["pixel_values"]
    grey = adapter._encode([target.prompt], [[Image.new("RGB", image.size, (128, 128, 128))]])["pixel_values"]
    total = torch.zeros_like(pixels)
    points = 128
    for alpha in (np.arange(points) + 0.5) / points:
        path = (grey + float(alpha) * (pixels - grey)).requires_grad_(True)
        margin = target.margin({**target.inputs, "pixel_values": path})
        total += torch.autograd.grad(margin.sum(), path)[0]
    attributions = ((pixels - grey) * total / points).double().numpy()
    hand = pixel_token_sums(attributions, adapter.image_views(image, target.inputs), len(target.image_positions))
    change = notes["margin"] - notes["baseline_margin"]
    assert abs(change) > 1e-3
    assert abs(hand.sum() - change) <= 0.05 * abs(change) and notes["relative_gap"] <= 0.05
    assert notes["baseline"] == [128, 128, 128]
    assert np.abs(values - np.abs(hand)).max() <= 0.05 * np.abs(hand).max()


def test_winsor_cam_weights_follow_the_reference_rule():
    """ReLU, clipped at the percentile of the non-zero weights, non-zero ones rescaled to [0.1, 1]; zeros stay."""
    weights = hf.winsorized_weights(np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 100.0]), 50)
    median = np.percentile([1.0, 2.0, 3.0, 100.0], 50)
    expected = np.array([0, 0, 0.1, 0.1 + 0.9 * (2 - 1) / (median - 1), 1.0, 1.0])
    assert weights == pytest.approx(expected)
    assert hf.winsorized_weights(np.array([-2.0, 0.0]), 90).tolist() == [0.0, 0.0]


def hand_patch_grid(adapter: HFAdapter, inputs: dict, per_patch: np.ndarray) -> np.ndarray:
    """Per-patch values of the vision tower laid out as the image: Qwen2-VL's rows come in merge groups, row
    ((i·W/m + j)·m + a)·m + b holding patch (i·m + a, j·m + b) (its image processor's transpose); LLaVA's are a
    CLS token and the patches row-major."""
    if "image_grid_thw" not in inputs:
        side = math.isqrt(len(per_patch) - 1)
        return per_patch[1:].reshape(side, side)
    _, high, wide = (int(v) for v in inputs["image_grid_thw"][0])
    merge = adapter.config.vision_config.spatial_merge_size
    groups = per_patch.reshape(high // merge, wide // merge, merge, merge)
    return groups.transpose(0, 2, 1, 3).reshape(high, wide)


def tokens_of(patch_grid: np.ndarray, token_grid: tuple[int, int]) -> np.ndarray:
    rows, cols = token_grid
    return patch_grid.reshape(rows, patch_grid.shape[0] // rows, cols, -1).mean(axis=(1, 3))


def test_winsor_cam_equals_hand_grad_cam_laid_out_as_the_image(adapter):
    """Per vision block, Grad-CAM of the margin log p(first) − log p(second) (autograd through the eager model's
    logits at the last prompt position, independent of option_scores): α = mean gradient over the patches,
    CAM = ReLU(A α) min–max; the blocks combined with their winsorized ReLU(mean α) weights; each patch put where
    its pixels are (hand_patch_grid, checked first on an image bright in its upper-left quadrant) and averaged per
    image token, so the map is oriented as the image and the occlusion cells. Qwen2-VL's tower is read only
    through LayerNorms (its merger's ln_q): every patch's gradient sums to zero over the channels, mean α is
    rounding noise, and the method says so instead of letting that noise's sign pick the layers."""
    pixels = np.zeros((224, 224, 3), dtype=np.uint8)
    pixels[:112, :112] = 255
    corner = Image.fromarray(pixels)
    letters = tuple(o for o in ("A", "B", "C", "D", "1", "2") if len(adapter._option_ids([o])[0]) == 1)[:2]
    target = hf._target(adapter, corner, request(letters), "last")
    raw = target.inputs["pixel_values"].float()
    rows = "image_grid_thw" in target.inputs  # Qwen2-VL: rows of flattened patches; LLaVA: one pixel frame
    if rows:
        laid_out = hand_patch_grid(adapter, target.inputs, raw.mean(dim=1).numpy())
    else:
        side = 224 // adapter.config.vision_config.patch_size
        laid_out = tokens_of(raw[0].mean(dim=0).numpy(), (side, side))
    half = laid_out.shape[0] // 2
    assert laid_out[:half, :half].min() > max(laid_out[half:].max(), laid_out[:, half:].max())

    model = eager_model(adapter)
    names = {module: name for name, module in adapter.model.named_modules()}
    outputs: list[torch.Tensor] = []
    hooks = [model.get_submodule(names[block]).register_forward_hook(
        lambda _m, _i, out: outputs.append(out[0] if isinstance(out, tuple) else out)) for block in
        adapter.vision_blocks()]
    logprobs = model(**target.inputs).logits[0, -1].float().log_softmax(dim=-1)
    for hook in hooks:
        hook.remove()
    (first,), (second,) = adapter._option_ids(list(letters))
    grads = torch.autograd.grad(logprobs[first] - logprobs[second], outputs, allow_unused=True)
    activations = [a.detach().reshape(-1, a.shape[-1]).double() for a in outputs]
    grads = [torch.zeros_like(a) if g is None else g.reshape(a.shape).double() for a, g in zip(
        activations, grads, strict=True)]
    patches = slice(None) if rows else slice(1, None)  # LLaVA's CLS token is no patch
    if rows:
        channel_sums = torch.stack([g.sum(dim=1).abs().max() / g.abs().sum(dim=1).max() for g in grads])
        assert channel_sums.max() < 1e-4  # zero but for rounding, against the gradient's size
        with pytest.raises(NotApplicable, match="zero within rounding"):
            hf.attribute(adapter, "winsor_cam", corner, request(letters), AttributionSettings())
        return
    alphas = [g[patches].mean(dim=0) for g in grads]
    sign = 1 if max(float(a.mean()) for a in alphas) > 0 else -1  # swapping the options negates m and α
    cams, weights = [], []
    for activation, alpha in zip(activations, alphas, strict=True):
        cam = (activation @ (sign * alpha)).clamp(min=0).numpy()[patches]
        scaled = (cam - cam.min()) / max(np.ptp(cam), 1e-300)
        cams.append(hand_patch_grid(adapter, target.inputs, np.r_[0.0, scaled]))  # a CLS slot in front
        weights.append(sign * float(alpha.mean()))
    layer_weights = hf.winsorized_weights(np.array(weights), 50)
    found = hf.attribute(adapter, "winsor_cam", corner, request(letters[::sign]),
                         AttributionSettings(winsor_percentile=50))
    expected = tokens_of(sum(w * cam for w, cam in zip(layer_weights, cams, strict=True)), found.map.shape)
    assert found.notes["layer_weights"] == pytest.approx(layer_weights, abs=1e-6) and layer_weights.max() == 1
    assert np.ptp(expected) > 0 and np.abs(found.map - expected).max() <= 1e-4 * np.abs(expected).max()
    # LLaVA reads one block (the second-last): with the options swapped its one weight is negative, so none is left.
    assert sum(w > 0 for w in weights) == 1 and sum(w != 0 for w in weights) == 1
    with pytest.raises(NotApplicable, match="is positive"):
        hf.attribute(adapter, "winsor_cam", corner, request(letters[::-sign]), AttributionSettings())


def test_every_method_runs_on_a_tiled_family_through_an_occlusion_request(tiny_model):
    """Idefics3 (2×2 tiles and a global view): each method's map is on the request's grid, finite and
    non-negative where it must be, each with its notes; RISE scores its masks in batches like occlusion. Its
    vision tower ends in a LayerNorm, so Winsor-CAM's layer weights vanish and it gives that reason."""
    adapter = HFAdapter(str(tiny_model("idefics3")))
    response = answer(adapter, noise(3), request(rise_masks=6, ig_steps=4), AttributionSettings(methods=METHODS))
    maps = {"attention": response.attention, **response.attributions}
    assert set(maps) == set(METHODS)
    assert maps.pop("winsor_cam") == f"NotApplicable: {hf.NO_LAYER_WEIGHT}"
    for name, found in maps.items():
        assert isinstance(found, np.ndarray) and found.shape == (8, 8) and np.isfinite(found).all(), name
    assert set(response.attribution_notes) == set(METHODS) - {"winsor_cam"}
    assert response.attribution_notes["rise"]["images_scored"] == 6
    assert {f"{kind}/{name}" for kind in ("insertion", "deletion") for name in (*maps, "random")} == set(
        response.curves)


def test_controls_without_gradients_give_reasons_not_numbers():
    """The program controls have no layers or gradients: those methods are reasons; RISE applies to any model."""
    image = noise(4, 64)
    for control in (PositiveControl(), BlindControl()):
        response = answer(control, image, request(rise_masks=4), AttributionSettings(methods=METHODS))
        for name in ("rollout", "gradient_attention", "winsor_cam", "integrated_gradients"):
            assert "exposes no layers or gradients" in response.attributions[name]
        assert isinstance(response.attributions["rise"], np.ndarray)
    assert not response.attributions["rise"].any()  # the blind control's margin never moves


class RedSquare:
    """A model whose Yes margin is the mean red level (0–1) of the image's upper-left 24×24 pixels."""

    def image_option_logprobs(self, images, text, options):
        return [[float(np.asarray(i, dtype=float)[:24, :24, 0].mean() / 255), 0.0] for i in images]


def test_rise_equals_a_brute_force_average_of_its_masks():
    """At N = 12 the map equals Σ (m_i − m̄) M_i / (N p) over the same masks, computed pixel by pixel; at N = 300
    it finds the square the model reads."""
    image = Image.fromarray(np.full((48, 48, 3), 200, dtype=np.uint8))
    grey = (128, 128, 128)
    found, notes = rise_map(RedSquare(), image, "q", ["Yes", "No"], 0, masks=12, cells=3, grid=4, seed=5, colour=grey)
    rng = np.random.default_rng(5)
    masks = [smooth_mask(rng, 3, (48, 48)) for _ in range(12)]
    pixels = np.asarray(image, dtype=float)
    margins = []
    for mask in masks:
        shown = np.rint(pixels * mask[..., None] + np.array(grey) * (1 - mask[..., None]))
        margins.append(shown[:24, :24, 0].mean() / 255)
    saliency = sum((m - np.mean(margins)) * mask for m, mask in zip(margins, masks, strict=True)) / (12 * KEEP)
    expected = saliency.reshape(4, 12, 4, 12).mean(axis=(1, 3))
    assert np.allclose(found, expected, atol=1e-12) and notes["masks"] == 12
    assert np.allclose(cell_means(saliency, 4), expected)
    many, _ = rise_map(RedSquare(), image, "q", ["Yes", "No"], 0, masks=300, cells=3, grid=4, seed=1, colour=grey)
    assert many[:2, :2].min() > many[2:, 2:].max()
    assert all(m.min() >= 0 and m.max() <= 1 for m in masks) and abs(np.mean(masks) - KEEP) < 0.1


def test_attribution_settings_from_model_args():
    """`attribution=all` or methods joined by '+', the token and layer range; unknown values are named."""
    args = {"attribution": "rollout+rise", "attention_token": "last", "attention_layers": "1-2", "pretrained": "x"}
    settings = AttributionSettings.pop_from(args)
    assert settings.methods == ("rollout", "rise") and settings.token == "last" and args == {"pretrained": "x"}
    assert AttributionSettings.pop_from({"attribution": "all"}).methods == METHODS
    with pytest.raises(ValueError, match=r"gradcam.*choose 'all'"):
        AttributionSettings.pop_from({"attribution": "attention+gradcam"})
    with pytest.raises(ValueError, match="attention_token"):
        AttributionSettings(token="first")
    for wrong in ("10-", "middle", "20-10"):
        with pytest.raises(ValueError, match="neither a layer set"):
            AttributionSettings(layers=wrong)
    assert math.isfinite(AttributionSettings().winsor_percentile)
