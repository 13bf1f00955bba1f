"""Strict request options (issue 23, class 7): a typo or a wrong type is a 400, never
silently the default; header and body values are each checked."""

import math

import pytest

from proxy.errors import InvalidRequest
from proxy.prompt.ragtrim_options import read_options


@pytest.mark.parametrize(
    ("headers", "field", "param"),
    [
        ({"x-ragtrim-compress": "maybe"}, None, "x-ragtrim-compress"),
        ({"x-ragtrim-compress": ""}, None, "x-ragtrim-compress"),
        ({}, {"rate": True}, "rate"), ({}, {"rate": "0.5"}, "rate"), ({}, {"rate": 0}, "rate"),
        ({}, {"rate": math.nan}, "rate"), ({"x-ragtrim-rate": "nan"}, None, "rate"),
        ({"x-ragtrim-rate": "inf"}, None, "rate"),
        ({"x-ragtrim-rate": "0.5"}, {"rate": 7}, "rate"),  # a header hides no bad body value
        ({}, {"compress": "no"}, "compress"), ({}, {"compress": 0}, "compress"),
        ({}, {"rat": 0.3}, "ragtrim"), ({}, {"documents": "one"}, "documents"),
        ({}, {"documents": ["a", 1]}, "documents"), ({}, {"question": ["q"]}, "question"),
        ({}, [], "ragtrim"),
    ],
)  # fmt: skip
def test_invalid_values_are_400s_naming_the_param(headers, field, param):
    with pytest.raises(InvalidRequest) as caught:
        read_options(headers, field)
    assert caught.value.param == param and caught.value.status == 400


@pytest.mark.parametrize(
    ("headers", "field", "compress", "rate"),
    [
        ({"x-ragtrim-compress": "OFF"}, None, False, None),
        ({"x-ragtrim-compress": "on"}, {"compress": False}, False, None),
        ({"x-ragtrim-compress": "yes", "x-ragtrim-rate": " 0.25"}, None, True, 0.25),
        ({}, {"rate": 1, "compress": True, "documents": [], "question": ""}, True, 1.0),
        ({"x-ragtrim-rate": "0.4"}, {"rate": 0.3}, True, 0.4),  # the header is more specific
    ],
)  # fmt: skip
def test_valid_values(headers, field, compress, rate):
    options = read_options(headers, field)
    assert (options.compress, options.rate) == (compress, rate)
