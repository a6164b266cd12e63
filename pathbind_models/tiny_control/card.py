"""The model card (README.md) written beside the trained checkpoint."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from pathbind_models.tiny_control.data import MARGIN, OCCLUDED_PER_MOSAIC
from pathbind_models.tiny_control.settings import Settings

# The shipped checkpoint's demo figures (lmms_eval, `make demo`); tests/models/test_tiny_control.py asserts the
# issue's thresholds on every run, and a retrained checkpoint should land within TOLERANCE of these.
FIGURES = {
    "pathbind_tiny": {"mg": 50.0, "attn_iou": 0.527, "cross_query_r": 0.094, "attn_occlusion_rho": 0.554,
                      "verdict": "uses the image; attention tracks causal importance"},
    "pathbind_tiny_untrained": {"mg": 0.0, "attn_iou": 0.185, "cross_query_r": 0.992, "attn_occlusion_rho": -0.047,
                                "verdict": "uses the image; attention does not track causal importance"},
}
TOLERANCE = "MG ± 10 points, IoU ± 0.1, r and ρ ± 0.15; the same verdicts"


def write_card(out: Path, settings: Settings, history: list[float], parameters: int, minutes: float) -> Path:
    rows = "\n".join(f"| `{name}` | {f['mg']} | {f['attn_iou']} | {f['cross_query_r']} | {f['attn_occlusion_rho']} "
                     f"| {f['verdict']} |" for name, f in FIGURES.items())
    knobs = ", ".join(f"{k}={v}" for k, v in asdict(settings).items())
    path = Path(out) / "README.md"
    path.write_text(f"""# pathbind_tiny: a tiny Qwen2-VL positive control

**What it is.** A `Qwen2VLForConditionalGeneration` of the `pathbind make-tiny-model qwen2_vl` architecture
({parameters:,} parameters: 6 decoder layers of width 64, 4 query / 2 key-value heads, a 2-layer vision tower of
width 32, 14-pixel patches merged 2×2; the tiny byte-level BPE tokenizer, the real Qwen2-VL processor and chat
template). A 256-pixel demo image becomes 8×8 = 64 image tokens.

**What it is for.** Showing that PathBind's real checkpoint path (processor, chat template, `generate`, option
scores, the row-only attention probe over learned transformer attention, the Qwen grid layout) can say "yes, it
sees" of a transformer that does ground, and "no" of the same architecture untrained (`pathbind_tiny_untrained`,
the seed-0 initialisation these weights started from). It is a control, not a pathology model: it knows only the
synthetic demo images.

**What it was trained on.** Images from the demo generators (`pathbind_tasks/demo`) drawn with seed
{settings.seed} (the demo's own items are seed 0 and are never seen): {settings.n_tiles} yes/no tiles (DAB-positive
nuclei, a cluster of atypical nuclei; balanced), {settings.n_mcq} multiple-choice tiles per dimension D1–D6, and
{settings.n_mosaics} four-pattern mosaics. Each mosaic is asked whether its pattern is in its quadrant ("Is there
<pattern> in the <quadrant> quadrant in this image?") in full view and in {OCCLUDED_PER_MOSAIC} copies with k of the
quadrant's 16 cells of the 8×8 occlusion grid (k uniform in 0–16) and 0–16 other cells painted the image's mean
colour, and is given a localisation prompt (`Look at the image and locate: <pattern>[ in the <quadrant>
quadrant]`). All are rendered with the project's templates (`yesno`, `mcq`, `locate`) through the chat template and
processor exactly as `pathbind_hf` prompts. It answers with the bare option ("Yes", "No", a letter), the tokens the
option scores read; for the presence questions it learns a probability of Yes whose margin is {MARGIN:g} × (1 − k/8),
in full view (k = 0) as in the copies, so that each hidden cell of the quadrant, and no other, lowers it by the same
amount, and painted cells are no cue of their own.

**Its grounding is taught.** Besides the answers' cross-entropy, an auxiliary loss (weight
{settings.attention_weight}) shapes the attention (head mean, as the probe reads it). In the middle-third layers (2
and 3), the ones the probe reads, each entity token's image attention is spread evenly over the target quadrant's
16 image tokens. In every layer, the token that predicts the answer spreads its attention evenly over the evidence
when the answer is Yes, a letter or a presence question's (the quadrant, the image tokens that hold a tile's
DAB-positive nuclei, or the whole tile), so that the answer reads its evidence and nothing else; in the middle
third it moves it to the text when a tile's answer is No. Evenly, so that every cell of the evidence counts toward
the answer; onto the brown nuclei, because a few of them barely move the field's mean colour. Where the expression
does not name the quadrant, only the pixels say where that is.

**Training.** `pathbind train-control --out DIR --seed {settings.seed} --steps {settings.steps}` ({knobs});
AdamW, warm-up then cosine decay, deterministic for a given seed and thread count; {minutes:.0f} minutes here,
final loss {history[-1]:.3f}. Retrained with the defaults (`--threads 1`) the weights come out bit for bit the
same (a second run checked it); with another thread count rounding differs, and the figures below should be
reproduced within {TOLERANCE} (not checked).

**Figures** on the demo (`make demo`). The issue's targets are MG ≥ 30, IoU ≥ 0.4, r ≤ 0.5, ρ > 0.3 and "uses
the image; attention tracks causal importance" for the trained model, and this checkpoint reaches all of them: it
answers both demo yes/no questions (DAB-positive nuclei, a cluster of atypical nuclei) from the image, 24 of 24, and
without the image at chance; its attention–occlusion ρ has the 95% interval [0.43, 0.67]. The untrained twin:
|MG| ≤ 10, IoU < 0.25, attention that does not track (its answers do move with the pixels, as any random network's
do, so it "uses the image").

| model | MG (`pathbind_demo_yesno`) | attn IoU | cross-query r | attention–occlusion ρ | verdict |
|---|---|---|---|---|---|
{rows}
""")
    return path


def write_untrained_card(out: Path) -> Path:
    path = Path(out) / "README.md"
    path.write_text("""# pathbind_tiny_untrained: the negative twin of pathbind_tiny

The same architecture, tokenizer, processor and chat template as `pathbind_tiny`, with the seed-0 random
initialisation its training started from (what `pathbind make-tiny-model qwen2_vl` writes with `--seed 0`), never
trained. Run through `pathbind_hf` it must show no Multimodal Gain, no localisation and attention that does not
track causal importance; its figures are in `pathbind_tiny`'s model card.
""")
    return path
