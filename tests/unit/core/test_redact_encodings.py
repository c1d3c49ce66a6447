"""``Redactor.encoded``: a secret blanked as it is and in the encodings a program applies to a whole value; how many
were blanked is counted; JSON is cleaned through and through; short values are left alone."""

from __future__ import annotations

import base64
from urllib.parse import quote

from hangar.core.redact import MARK, MIN_SECRET, Redactor, encodings

SECRET = "tok/en+Value-0042"


def test_every_encoding_of_the_value_is_blanked_and_counted() -> None:
    raw = SECRET.encode()
    forms = [
        SECRET,
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(raw + b"\n").decode(),
        raw.hex(),
        quote(SECRET, safe=""),
    ]
    assert set(forms) <= set(encodings(SECRET))
    r = Redactor.encoded([SECRET])
    assert r.clean(" | ".join(forms)) == " | ".join([MARK] * len(forms))
    assert r.count == len(forms)


def test_json_is_cleaned_in_texts_and_keys_and_other_values_kept() -> None:
    r = Redactor.encoded([SECRET])
    value = {"a": [SECRET, 3, None, {"b": f"x{SECRET}y"}], SECRET: True}
    assert r.clean_json(value) == {"a": [MARK, 3, None, {"b": f"x{MARK}y"}], MARK: True}
    assert r.count == 3


def test_a_value_shorter_than_the_minimum_is_not_blanked_one_at_it_is() -> None:
    short, enough = "s" * (MIN_SECRET - 1), "e" * MIN_SECRET
    r = Redactor.encoded([short, enough])
    assert r.clean(f"{short} {enough}") == f"{short} {MARK}" and r.count == 1
