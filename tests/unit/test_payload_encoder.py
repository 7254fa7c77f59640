"""Payloads are encoded by json's C encoder made once (``checks._ENCODE``), not by
``JSONEncoder.encode``, which makes it again at each call; the text is the same."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import skiplock
from skiplock._core import checks

SAMPLES: list[Any] = [
    {"n": 1},
    {},
    [],
    "text",
    'é\u2028\x00"\\',
    0,
    -(2**70),
    1.5,
    -0.0,
    1e300,
    5e-324,
    True,
    None,
    {"a": [1, {"b": [None, False, "x"]}], "": {"é": 2.25}},
    [[[]]],
    {"k": (1, 2)},  # a tuple is written as a list
]


def test_the_c_encoder_is_made_once() -> None:
    # CPython has json's C encoder: the one made at import is used, not encode()
    assert json.encoder.c_make_encoder is not None
    assert checks._ENCODE is not checks._ENCODER.encode


@pytest.mark.parametrize("value", SAMPLES)
def test_the_text_is_what_json_writes(value: Any) -> None:
    want = json.dumps(value, allow_nan=False, ensure_ascii=True, separators=(",", ":"))
    assert checks.dumps(value, "payload") == want


@pytest.mark.parametrize("value", [math.nan, math.inf, [1, {"x": -math.inf}]])
def test_nan_and_infinity_are_refused(value: Any) -> None:
    with pytest.raises(skiplock.PayloadError, match="Out of range float"):
        checks.dumps(value, "payload")


def test_a_cycle_is_refused_as_too_deep() -> None:
    # the encoder has no circular-reference markers: the depth check stops a cycle first
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(skiplock.PayloadError, match="nested more than"):
        checks.dumps(loop, "payload")
    cyclic: dict[str, Any] = {}
    cyclic["me"] = cyclic
    with pytest.raises(skiplock.PayloadError, match="nested more than"):
        checks.dumps(cyclic, "payload")


def test_an_object_json_cannot_write_is_refused() -> None:
    with pytest.raises(skiplock.PayloadError, match="TypeError"):
        checks.dumps({"when": object()}, "payload")


def test_without_a_usable_c_encoder_the_public_one_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    assert checks._made_once() == checks._ENCODER.encode

    def another_signature(*args: Any) -> Any:
        raise TypeError("takes 10 arguments")

    monkeypatch.setattr(json.encoder, "c_make_encoder", another_signature)
    assert checks._made_once() == checks._ENCODER.encode

    def writes_otherwise(*args: Any) -> Any:
        def encoder(value: Any, level: int) -> Any:
            if isinstance(value, float) and math.isnan(value):
                raise ValueError("Out of range float values are not JSON compliant")
            return ("[]",)

        return encoder

    monkeypatch.setattr(json.encoder, "c_make_encoder", writes_otherwise)
    assert checks._made_once() == checks._ENCODER.encode
