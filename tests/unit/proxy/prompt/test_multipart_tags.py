"""ragtrim's tags never reach the model, also when a message's content has several
text parts (issue 23, class 7: segmentation addresses one text per message, and the
tags of the others were forwarded)."""

import json

import httpx

from proxy.prompt.body import strip_multipart_tags

DOC = "<ragtrim:doc>Paris is the capital of France.</ragtrim:doc>"
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def parts(*texts: str) -> list:
    return [{"type": "text", "text": t} for t in texts]


def test_tags_leave_every_text_part_and_the_rest_stays():
    content = [*parts(DOC, "<ragtrim:question>Where is Paris?</ragtrim:question>"), IMAGE]
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": content}]
    out = strip_multipart_tags(messages)
    assert out[0] is messages[0] and out[1]["content"][2] == IMAGE
    assert [p["text"] for p in out[1]["content"][:2]] == [
        "Paris is the capital of France.", "Where is Paris?"]  # fmt: skip


def test_nothing_to_strip_is_no_change():
    assert strip_multipart_tags([{"role": "user", "content": parts("a", "b")}]) is None
    stray = parts("a </ragtrim:doc>", "<ragtrim:question>b")  # no document: left, as in one text
    assert strip_multipart_tags([{"role": "user", "content": stray}]) is None
    one = [{"role": "user", "content": parts(DOC)}]  # one text part: the recogniser's own
    assert strip_multipart_tags(one) is None


def test_through_the_proxy_no_tag_reaches_the_backend(stub, make_proxy):
    proxy = make_proxy([stub.url])
    content = parts(DOC, DOC.replace("Paris", "Rome"), "Question: which capitals?")
    body = {"model": "stub-model", "messages": [{"role": "user", "content": content}],
            "stub": {"echo": True}}  # fmt: skip
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
    assert resp.status_code == 200
    sent = json.dumps(resp.json()["echo"])
    assert "ragtrim:" not in sent and "Rome is the capital" in sent
