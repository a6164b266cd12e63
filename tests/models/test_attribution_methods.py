"""The attribution methods against independent computations on tiny checkpoints: rollout and gradient×attention
against eager attention matrices, Integrated Gradients against a hand integral (and its completeness), RISE against
a brute-force average, Winsor-CAM's layer weights against the reference code's rule, controls without gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from pathbind.wire import OcclusionRequest
from pathbind_models.attribution import METHODS, AttributionSettings
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


def test_every_method_runs_on_a_tiled_family_through_an_occlusion_request(tiny_model):
    """Idefics3 (2×2 tiles and a global view): each method's map is on the request's grid, finite and
    non-negative where it must be, each with its notes; RISE scores its masks in batches like occlusion."""
    adapter = HFAdapter(str(tiny_model("idefics3")))
    response = answer(adapter, noise(3), request(rise_masks=6, ig_steps=4), AttributionSettings(methods=METHODS))
    maps = {"attention": response.attention, **response.attributions}
    assert set(maps) == set(METHODS)
    for name, found in maps.items():
        assert isinstance(found, np.ndarray) and found.shape == (8, 8) and np.isfinite(found).all(), name
    assert set(response.attribution_notes) == set(METHODS)
    assert response.attribution_notes["rise"]["images_scored"] == 6
    assert {f"{kind}/{name}" for kind in ("insertion", "deletion") for name in (*METHODS, "random")} == set(
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
