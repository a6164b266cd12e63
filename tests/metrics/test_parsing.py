"""Strict answer parsing: every rule of pathbind_metrics.parsing, one table row per case."""

import doctest

import pytest

from pathbind_metrics import parsing
from pathbind_metrics.parsing import choice_letters, parse_choice, parse_yes_no

OPTS = ["Adenocarcinoma", "Squamous cell carcinoma", "Lymphoma", "Normal tissue"]
OPTS3 = OPTS[:3]

CONTAINED = [
    ("<answer>C</answer>", OPTS, "C"),
    ("<think>maybe A</think><answer>C</answer>", OPTS, "C"),
    ("<THINK>Answer: A</THINK>\n<Answer>B</ANSWER>", OPTS, "B"),
    ("<answer>A</answer> on second thought <answer>D</answer>", OPTS, None),
    ("<answer>B</answer><answer>C</answer>", OPTS, None),
    ("<answer>B</answer> so <answer>b</answer>", OPTS, "B"),
    ("<think><answer>A</answer></think><answer>C</answer><answer>C</answer>", OPTS, "C"),
    ("Answer: A. <answer>B</answer>", OPTS, "B"),
    ("<answer>a</answer>", OPTS, "A"),
    ("<answer>(c)</answer>", OPTS, "C"),
    ("<answer>lymphoma</answer>", OPTS, "C"),
    ("<answer>B. Squamous cell carcinoma</answer>", OPTS, "B"),
    ("<answer>The answer is D</answer>", OPTS, "D"),
    ("<answer>C", OPTS, "C"),
    ("<think>A is tempting.\n<answer>D</answer>", OPTS, "D"),
    ("<think>Answer: A, still thinking", OPTS, None),
    ("Option A looks right.</think>\nB", OPTS, "B"),
    ("<think><answer>A</answer></think> C", OPTS, "C"),
    ("<answer></answer>", OPTS, None),
    ("<answer>   </answer>", OPTS, None),
    ("<answer>A or B</answer>", OPTS, None),
    ("<answer>E</answer>", OPTS, None),
    ("<answer>a gland</answer>", OPTS, None),
    ("<answer>maybe</answer> Answer: B", OPTS, None),
    (r"\boxed{B}", OPTS, "B"),
    (r"The answer is \boxed{\text{C}}", OPTS, "C"),
    (r"\boxed{A} no, \boxed{D}", OPTS, None),
    (r"\boxed{D} so \boxed{\text{D}}", OPTS, "D"),
    (r"\boxed{b}", OPTS, "B"),
    (r"Answer: A. Final: \boxed{C}", OPTS, "C"),
    (r"\boxed{}", OPTS, None),
]

STRICT_FORMS = [
    ("Answer: B", OPTS, "B"),
    ("The answer is C", OPTS, "C"),
    ("the answer is: (A)", OPTS, "A"),
    ("The correct option is (D).", OPTS, "D"),
    ("(B)", OPTS, "B"),
    ("I choose (B) for the keratin pearls.", OPTS, "B"),
    ("B.", OPTS, "B"),
    ("B)", OPTS, "B"),
    ("B", OPTS, "B"),
    ("  C \n", OPTS, "C"),
    ("Lymphoma", OPTS, "C"),
    ("  squamous   CELL carcinoma. ", OPTS, "B"),
    ("B. Squamous cell carcinoma", OPTS, "B"),
    ("(D) Normal tissue", OPTS, "D"),
    ("Option B", OPTS, "B"),
    ("Final Answer: **C**", OPTS, "C"),
    ("Answer: Lymphoma", OPTS, "C"),
    ("Answer: B. Because A is wrong", OPTS, "B"),
    ("Answer: C\nAnswer: C", OPTS, "C"),
    ("C", OPTS3, "C"),
    ("The correct option is (d).", OPTS, "D"),
    ("Answer: c", OPTS, "C"),
    ("Answer: a", OPTS, "A"),
    ("Final answer: (b)", OPTS, "B"),
    ("I pick option (c) here.", OPTS, "C"),
    ("Answer: B, not C", OPTS, "B"),
    ("It is not (A); the answer is (B).", OPTS, "B"),
    ("Rather than (A), I choose (C).", OPTS, "C"),
    ("I am not sure, (B).", OPTS, "B"),
    ("Final answer: (b) squamous", OPTS, "B"),
    ("Answer: b) squamous", OPTS, "B"),
]

INVALID = [
    ("There is a gland.", OPTS, None),
    ("The answer is a gland", OPTS, None),
    ("A gland is seen.", OPTS, None),
    ("a", OPTS, None),
    ("A or B", OPTS, None),
    ("A and C", OPTS, None),
    ("(A) or (B)", OPTS, None),
    ("Answer: A or B", OPTS, None),
    ("Answer: A, C", OPTS, None),
    ("Answer: A ... Answer: B", OPTS, None),
    ("Answer: B. Because (A) is wrong", OPTS, None),
    ("Option A is wrong, option B is right.", OPTS, None),
    ("B. Lymphoma", OPTS, None),
    ("E", OPTS, None),
    ("Answer: E", OPTS, None),
    ("D", OPTS3, None),
    ("Answer: B or E", OPTS, None),
    ("", OPTS, None),
    ("   ", OPTS, None),
    ("I am not sure.", OPTS, None),
    ("Answer: Based on the morphology, carcinoma.", OPTS, None),
    ("It is some kind of carcinoma.", OPTS, None),
    ("B", [], None),
    ("The answer is B or maybe C", OPTS, None),
    ("Answer: B, or possibly C", OPTS, None),
    ("The answer is a.k.a. unknown", OPTS, None),
    ("Answer: c or d", OPTS, None),
    ("Answer: (c) or (d)", OPTS, None),
    ("Answer: B (or maybe C)", OPTS, None),
    ("The answer is a", OPTS, None),
    ("Answer: a gland", OPTS, None),
    ("Answer: c, d", OPTS, None),
    ("Answer: c or E", OPTS, None),
    ("The answer is not (A)", OPTS, None),
    ("Option (e)", OPTS, None),
    ("I am not sure between (A) and (B)", OPTS, None),
]


@pytest.mark.parametrize(("text", "options", "expected"), CONTAINED)
def test_answer_tag_and_boxed(text: str, options: list[str], expected: str | None) -> None:
    """Only the last answer tag (else the last box) is read, after dropping reasoning."""
    assert parse_choice(text, options) == expected


@pytest.mark.parametrize(("text", "options", "expected"), STRICT_FORMS)
def test_strict_forms(text: str, options: list[str], expected: str | None) -> None:
    """Each strict form over the whole text names its option."""
    assert parse_choice(text, options) == expected


@pytest.mark.parametrize(("text", "options", "expected"), INVALID)
def test_invalid_is_none(text: str, options: list[str], expected: str | None) -> None:
    """Articles, hedges, conflicts, out-of-range letters and empty text give None, never a guess."""
    assert parse_choice(text, options) is expected


YES_NO = [
    ("Yes", "yes"),
    ("yes.", "yes"),
    ("YES!", "yes"),
    ("Yes, the tissue is benign.", "yes"),
    ("<answer>Yes</answer>", "yes"),
    ("<answer>是</answer>", "yes"),
    ("是", "yes"),
    ("是的。", "yes"),
    ("The answer is yes because the glands are intact.", "yes"),
    ("Answer: yes", "yes"),
    (r"\boxed{\text{Yes}}", "yes"),
    ("<think>no</think>Yes", "yes"),
    ("No.", "no"),
    ("no", "no"),
    ("No, there is no malignancy.", "no"),
    ("Looking closely.\nNo", "no"),
    ("<answer>否</answer>", "no"),
    ("不是", "no"),
    ("Answer: No", "no"),
    ("nodular lesion", None),
    ("Nodule present.", None),
    ("none", None),
    ("not sure", None),
    ("not", None),
    ("Cannot determine.", None),
    ("No malignancy is seen", None),
    ("The lesion shows no evidence of malignancy and appears benign in this section.", None),
    ("Yes and no", None),
    ("yes or no", None),
    ("yes/no", None),
    ("Yes. No.", None),
    ("Answer: yes. Answer: no.", None),
    ("<answer>Yes</answer> \u2026 <answer>No</answer>", None),
    ("<answer>Yes</answer><answer>yes</answer>", "yes"),
    ("Yes, but actually no.", None),
    ("No. Actually, yes.", None),
    ("No, wait, yes.", None),
    ("The tissue is benign, yes.", "yes"),
    ("是否", None),
    ("<answer>maybe</answer> Yes", None),
    ("<answer></answer>", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), YES_NO)
def test_parse_yes_no(text: str, expected: str | None) -> None:
    """Yes/no needs one clear leading, explicit or hedged answer; words merely containing "no" never count."""
    assert parse_yes_no(text) == expected


SELF_CORRECTED_YES_NO = [
    "The answer is no. Actually, it is yes.", "Yes. Wait, no.", "No. On second thought, yes.",
    "No, I mean yes.", "The answer is yes. Sorry, make that no.", "Yes. Hmm, I was wrong: it is no.",
    "No. Correction: the answer is yes.", "Yes, scratch that, no.", "是的。不对，不是。", "Yes, but actually no.",
    "<answer>No. Actually, it is yes.</answer>", "No - sorry, yes.", "Yes — hmm, no.", "no... yes",
]
SELF_CORRECTED_CHOICE = [
    "A. Actually, B.", "The answer is A. Wait, it should be C.", "Answer: B. Sorry, I mean D.",
    "(A) I was wrong, (C).", "Answer: A. Scratch that: D", "I think it is B. Actually, C.",
    "A. On second thought, C is correct.", "Answer: C. Let me reconsider... it is A.", "B. Make that D.",
    "<answer>A. Actually, B.</answer>", "Answer: B. Actually, Lymphoma.",
    "I would say A, no wait, D.", "B... actually C", "Answer: A - ugh, C.", "(B) hmm, (D)", "A; hold on; C",
]


@pytest.mark.parametrize("text", SELF_CORRECTED_YES_NO)
def test_a_self_corrected_yes_no_names_both_answers(text: str) -> None:
    """However the correction is worded, a corrected yes/no answer names both: invalid."""
    assert parse_yes_no(text) is None


@pytest.mark.parametrize("text", SELF_CORRECTED_CHOICE)
def test_a_self_corrected_choice_names_both_options(text: str) -> None:
    """However the correction is worded, a corrected option names both: invalid."""
    assert parse_choice(text, OPTS) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("Yes. Actually, yes.", "yes"), ("Yes, actually the glands are benign.", "yes"),
    ("Yes, the glands are well formed. Actually, no malignancy is seen.", "yes"),
    ("B. Actually, B is correct.", "B"), ("Answer: B. Actually, the glands show atypia.", "B"),
    ("Answer: B. Actually, option B is right because C is wrong.", "B"), ("B. Actually, I think it is B.", "B"),
    ("A. Because the nuclei are not B's and C is wrong.", "A"), ("Answer: D. B-cell markers are negative.", "D"),
    ("No, there is no malignancy.", "no"), ("Yes. No atypia, no mitoses are seen.", "yes"),
    ("Answer: C. T and B cells surround it.", "C"), ('"Yes"', "yes"),
])
def test_a_correction_that_repeats_the_answer_or_names_none_keeps_it(text: str, expected: str) -> None:
    """"Actually" before the same answer, or before no answer at all, is no second answer."""
    assert (parse_yes_no(text) if expected in ("yes", "no") else parse_choice(text, OPTS)) == expected


@pytest.mark.parametrize(("n", "expected"), [(0, []), (1, ["A"]), (4, ["A", "B", "C", "D"])])
def test_choice_letters(n: int, expected: list[str]) -> None:
    """Letters run from A, one per option."""
    assert choice_letters(n) == expected


@pytest.mark.parametrize("n", [-1, 27])
def test_choice_letters_out_of_range(n: int) -> None:
    """More letters than the alphabet, or a negative count, is an error."""
    with pytest.raises(ValueError, match="0 to 26"):
        choice_letters(n)


def test_doctests() -> None:
    """The docstring examples run and hold."""
    result = doctest.testmod(parsing)
    assert result.attempted > 0
    assert result.failed == 0
