"""compressors/stable_growth.py: a form grows at its end, keeping every earlier byte."""

import pytest

from compressors.stable_growth import SEPARATOR, grow, missing_sentences

DOC_A = "Paris is the capital. It has a river. The river is the Seine."
DOC_B = "Lyon is a city. It is known for food. It lies on the Rhone."


def test_a_selection_the_form_holds_adds_nothing_and_returns_the_form_itself():
    form = ("Paris is the capital. The river is the Seine.", "Lyon is a city.")
    fresh = ("The river is the Seine.", "Lyon is a city.")
    growth = grow(form, fresh)
    assert growth.added == 0 and growth.texts == form


def test_missing_sentences_go_after_the_last_document_and_every_earlier_byte_stays():
    form = ("Paris is the capital.", "Lyon is a city.")
    fresh = ("It has a river.", "It lies on the Rhone.")
    growth = grow(form, fresh)
    joined = "\n\n".join(growth.texts)
    assert joined.startswith("\n\n".join(form))  # the form's bytes come first
    assert (
        growth.texts[1] == "Lyon is a city." + SEPARATOR + "It has a river. It lies on the Rhone."
    )
    assert growth.added == 2


def test_a_sentence_added_before_is_found_in_the_last_document():
    form = ("Paris is the capital.", "Lyon is a city." + SEPARATOR + "It has a river.")
    assert missing_sentences(form, ("It has a river.", "")) == []


def test_an_empty_last_document_is_skipped_and_an_empty_form_takes_the_additions():
    assert grow(("Paris is the capital.", ""), ("It has a river.", "")).texts == (
        "Paris is the capital." + SEPARATOR + "It has a river.", "")  # fmt: skip
    assert grow(("", ""), ("It has a river.", "")).texts == ("It has a river.", "")


def test_the_union_holds_every_sentence_of_the_fresh_selection():
    form = ("Paris is the capital.", "Lyon is a city.")
    fresh = (DOC_A, DOC_B)
    sent = "\n".join(grow(form, fresh).texts)
    for sentence in [*DOC_A.split(". "), *DOC_B.split(". ")]:
        assert sentence.rstrip(".") in sent


def test_form_and_fresh_must_have_the_same_documents():
    with pytest.raises(ValueError):
        grow(("a",), ("a", "b"))
