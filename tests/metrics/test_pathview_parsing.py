"""PathView answer reading: refusals, boxes, counts, options and entities through the vocabulary."""

from __future__ import annotations

import pytest

from pathbind_metrics.labels import LabelMatcher
from pathbind_metrics.pathview_parsing import parse_boxes, parse_count, parse_entities, parse_option
from pathbind_metrics.refusal import REFUSAL_PHRASES, is_refusal
from pathbind_tasks.common.pathview_vocabulary import answer_class, matcher, vocabulary


@pytest.mark.parametrize("text", [
    "<answer>insufficient evidence</answer>",
    "<answer> Insufficient Evidence. </answer>",
    "<think>An isolated cell.</think><answer>insufficient evidence</answer>",
    "The organ cannot be determined from a few isolated cells.",
    "I can't determine the count at this magnification.",
    "There is not enough information in this field.",
    "<answer>Unable to count: nuclei are not resolved.</answer>",
    "This is indeterminate.",
    "I cannot determine the organ, but it is not possible to say more.",
    "The organ cannot be determined; it's hard to say, but it is unclear.",
    "<answer>insufficient evidence</answer><answer>Cannot be determined.</answer>",
])
def test_refusals_are_recognised(text):
    """The explicit form, or a listed phrase, in the answer region is a refusal."""
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    "No.", "<answer>No</answer>", "none", "No nodules are seen.", "Not atypical.", "<answer>nodule</answer>",
    "Unknown organ, probably breast.", "<answer>B</answer>",
    "<think>The organ cannot be determined easily, but</think><answer>C</answer>",
    "I cannot determine... just kidding. <answer>12</answer>",
    "The cannot-be-determined case does not apply: <answer>breast</answer>",
    "I cannot determine the organ, but it is liver",
    "Cannot be determined with certainty; however, this is probably kidney.",
    "Insufficient evidence. Answer: liver",
    "<answer>insufficient evidence</answer><answer>liver</answer>",
])
def test_answers_are_not_refusals(text):
    """Single negative words never count, and an answer tag that holds an answer is an answer."""
    assert not is_refusal(text)


@pytest.mark.parametrize("phrase", REFUSAL_PHRASES)
def test_every_listed_phrase_is_detected_in_a_sentence(phrase):
    """Each documented phrase is found inside ordinary prose, whatever its case."""
    text = f"Looking at the slide, it {phrase.replace('{cannot}', 'cannot').upper()} here."
    assert is_refusal(text)


def test_phrases_need_word_boundaries():
    """A listed phrase glued into a longer word is not a refusal."""
    assert not is_refusal("The tissue is xindeterminate-looking")  # hyphen ends the word only on the right
    assert is_refusal("It is indeterminate-looking")


@pytest.mark.parametrize(("text", "expected"), [
    ("<answer>[10, 20, 30, 40]</answer>", [[10, 20, 30, 40]]),
    ("<answer>[10, 20, 30, 40], [0.5, 0.25, 0.75, 1]</answer>", [[10, 20, 30, 40], [0.5, 0.25, 0.75, 1]]),
    ('{"bbox_2d": [1, 2, 3, 4], "label": "tumor"}', [[1, 2, 3, 4]]),
    ("<answer>[-3, 2, 5, 9]</answer>", [[-3, 2, 5, 9]]),
    ("<answer>[x_min, y_min, x_max, y_max]</answer>", None),
    ("<answer>[1, 2, 3]</answer>", None),
    ("<answer>the upper left</answer>", None),
    ("", None),
])
def test_parse_boxes(text, expected):
    """Every bracketed four-number list, in order; none is None."""
    assert parse_boxes(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("<answer>12</answer>", 12), ("There are about 12 lymphocytes.", 12), ("<answer>0</answer>", 0),
    ("<answer>1,204</answer>", 1204), ("<think>maybe 10 or 14</think><answer>14</answer>", 14),
    ("<answer>10-15</answer>", None), ("<answer>12.5</answer>", None), ("<answer>-3</answer>", None),
    ("<answer>twelve</answer>", None), ("12 lymphocytes and 3 plasma cells", None), ("", None),
])
def test_parse_count_never_reads_an_unparseable_count_as_zero(text, expected):
    """One non-negative whole number, else None (never 0 by default)."""
    assert parse_count(text) == expected


OPTIONS = ["lymphocyte", "neoplastic cell", "fibroblast", "plasma cell"]


@pytest.mark.parametrize(("text", "expected"), [
    ("<answer>B</answer>", "neoplastic cell"), ("<answer>b</answer>", "neoplastic cell"),
    ("<answer>Fibroblast</answer>", "fibroblast"), ("<answer>Tumour cells</answer>", "neoplastic cell"),
    ("These are lymphocytes.", "lymphocyte"), ("<answer>spindle cell</answer>", "fibroblast"),
    ("<answer>A or B</answer>", None), ("<answer>lymphocyte or plasma cell</answer>", None),
    ("<answer>E</answer>", None), ("<answer>macrophage</answer>", None),
    ("<answer>B</answer><answer>C</answer>", None),
    ("<answer>B</answer><answer>neoplastic cell</answer>", "neoplastic cell"),
    ("<answer>fibroblast</answer><answer>lymphocyte</answer>", None),
    ("These are not lymphocytes.", None), ("No lymphocytes; fibroblasts.", "fibroblast"),
    ("They aren't fibroblasts but lymphocytes.", "lymphocyte"),
    ("Plasma cells rather than lymphocytes.", "plasma cell"),
    ("The correct option is (d).", "plasma cell"),
])
def test_parse_option_by_letter_text_or_synonym(text, expected):
    """An option by letter, by text, or by a synonym of its label; several or none is None."""
    assert parse_option(text, OPTIONS, matcher()) == expected


def test_parse_option_ignores_a_negated_option():
    """A negated option is not that option: "not tumor" names nothing."""
    assert parse_option("It is definitely not tumor", ["tumor", "stroma"], matcher()) is None
    assert parse_option("It is definitely tumor", ["tumor", "stroma"], matcher()) == "tumor"


@pytest.mark.parametrize("text", ["A. Actually, stroma.", "Stroma. Wait, it is tumor.",
                                  "Tumor. Sorry, I mean stroma.", "B. On second thought, A."])
def test_parse_option_refuses_a_self_correction_by_letter_or_label(text):
    """A correction whose parts name different options, by letter or by label, is invalid."""
    assert parse_option(text, ["tumor", "stroma"], matcher()) is None
    assert parse_option("A. Actually, A is right.", ["tumor", "stroma"], matcher()) == "tumor"


def test_parse_entities_through_synonyms_longest_first():
    """'tumour cells' is a neoplastic cell, not a tumour; think blocks are ignored."""
    text = "<think>necrosis?</think><answer>Tumour cells in desmoplastic stroma, TILs and a blood vessel</answer>"
    assert parse_entities(text, matcher()) == ["neoplastic cell", "stroma", "lymphocytic infiltrate", "blood vessel"]


def test_vocabulary_has_44_labels_28_organs_and_the_fixed_classes():
    """labels.yaml: the paper's 44 canonical labels and 28 organs, four quadrants and four area bins."""
    sections = vocabulary()
    assert len(sections["labels"]) == 44 and len(sections["organs"]) == 28
    assert list(sections["quadrants"]) == ["upper left", "upper right", "lower left", "lower right"]
    assert list(sections["area_bins"]) == ["0-25%", "25-50%", "50-75%", "75-100%"]
    assert len(matcher().labels) == 44 + 28 + 4 + 4


def test_every_synonym_resolves_to_its_own_label():
    """Each surface form of labels.yaml is read back as its canonical name, singular and plural."""
    for section in vocabulary().values():
        for label, synonyms in section.items():
            for form in (label, *synonyms):
                assert matcher().canonical(form) == label, form
                if form[-1].isalpha():
                    assert matcher().canonical(form + "s") == label, form


def test_matcher_rejects_a_form_naming_two_labels():
    """A synonym shared by two labels is a data error."""
    with pytest.raises(ValueError, match="'carcinoma' names both 'tumor' and 'invasive carcinoma'"):
        LabelMatcher({"tumor": ["carcinoma"], "invasive carcinoma": ["carcinoma"]})


def test_answer_classes_use_canonical_names():
    """Options written with synonyms or other spellings fall in one class."""
    assert answer_class("Top-left") == answer_class("upper left") == "upper left"
    assert answer_class("0 to 25%") == "0-25%"
    assert answer_class("Some other option") == "some other option"
