"""compressors/stable_growth.py: a form grows at its end, keeping every earlier byte;
presence is sentence membership, and an added sentence names its document."""

import pytest

from compressors.stable_growth import grow, marker, missing_sentences

DOC_A = "Paris is the capital. It has a river. The river is the Seine."
DOC_B = "Lyon is a city. It is known for food. It lies on the Rhone."


def test_a_selection_the_form_holds_adds_nothing_and_returns_the_form_itself():
    form = ("Paris is the capital. The river is the Seine.", "Lyon is a city.")
    fresh = ("The river is the Seine.", "Lyon is a city.")
    growth = grow(form, fresh)
    assert growth.added == 0 and growth.texts == form


def test_missing_sentences_go_after_the_last_document_under_their_documents_markers():
    form = ("Paris is the capital.", "Lyon is a city.")
    fresh = ("It has a river.", "It lies on the Rhone.")
    growth = grow(form, fresh)
    joined = "\n\n".join(growth.texts)
    assert joined.startswith("\n\n".join(form))  # the form's bytes come first
    assert growth.texts[1] == (
        "Lyon is a city." + marker(0) + "It has a river." + marker(1) + "It lies on the Rhone."
    )
    assert marker(0) == "\n[document 1] " and growth.added == 2


def test_a_sentence_added_before_is_found_in_its_documents_group():
    form = ("Paris is the capital.", "Lyon is a city." + marker(0) + "It has a river.")
    assert missing_sentences(form, ("It has a river.", "")) == [[], []]
    # the same text added for another document is not this document's
    assert missing_sentences(form, ("", "It has a river.")) == [[], ["It has a river."]]


def test_presence_is_a_whole_sentence_never_a_substring():
    """Issue 44: "Approved by the city council." was counted present inside another
    document's "Not Approved by the city council.", and the Berlin permit's outcome
    was never sent."""
    form = ("Berlin permit 4: filed.", "Munich permit 17: Not Approved by the city council.")
    fresh = ("Berlin permit 4: filed. Approved by the city council.", "")
    growth = grow(form, fresh)
    assert growth.added == 1
    assert growth.texts[1].endswith(marker(0) + "Approved by the city council.")
    assert missing_sentences(growth.texts, fresh) == [[], []]  # now held, as a sentence


def test_the_same_boilerplate_in_two_documents_is_each_documents_own():
    boiler = "This record is confidential."
    form = (f"Doc one. {boiler}", "Doc two.")
    fresh = (boiler, f"Doc two. {boiler}")
    assert missing_sentences(form, fresh) == [[], [boiler]]


def test_an_empty_last_document_is_skipped_and_an_empty_form_takes_the_additions():
    assert grow(("Paris is the capital.", ""), ("It has a river.", "")).texts == (
        "Paris is the capital." + marker(0) + "It has a river.", "")  # fmt: skip
    assert grow(("", ""), ("It has a river.", "Lyon.")).texts == ("It has a river.", "Lyon.")


def test_the_union_holds_every_sentence_of_the_fresh_selection():
    form = ("Paris is the capital.", "Lyon is a city.")
    fresh = (DOC_A, DOC_B)
    grown = grow(form, fresh).texts
    assert missing_sentences(grown, fresh) == [[], []]
    sent = "\n".join(grown)
    for sentence in [*DOC_A.split(". "), *DOC_B.split(". ")]:
        assert sentence.rstrip(".") in sent


def test_a_second_growth_keeps_the_first_and_adds_only_what_is_new():
    first = grow(("Paris is the capital.", "Lyon is a city."), ("It has a river.", "")).texts
    second = grow(first, ("It has a river. The river is the Seine.", "It lies on the Rhone."))
    assert second.texts[1].startswith(first[1]) and second.added == 2


def test_form_and_fresh_must_have_the_same_documents():
    with pytest.raises(ValueError):
        grow(("a",), ("a", "b"))
