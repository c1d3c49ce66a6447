"""Reading ``application/x-www-form-urlencoded`` bodies under a size bound, each parameter at most once."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

from hangar.httpkit.requests import BodyTooLarge, read_body

MAX_FORM_BYTES = 16 * 1024


class BadForm(ValueError):
    """The body is not a form this endpoint takes; the message says why."""


async def read_form(request: Request, limit: int = MAX_FORM_BYTES) -> dict[str, str]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise BadForm("the body must be application/x-www-form-urlencoded")
    try:
        body = await read_body(request, limit)
    except BodyTooLarge:
        raise BadForm(f"the form is larger than {limit} bytes") from None
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        raise BadForm("the form cannot be read") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise BadForm(f"{name} is given more than once")
        form[name] = value
    return form
