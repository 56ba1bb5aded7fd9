"""Schemathesis hooks for infra/tests/contract.sh: every error answer is the JSON envelope.

`response_schema_conformance` checks the statuses the document lists; this check also
holds the ones it does not (a 405, a 4xx the document forgot) to the contract of
docs/api.md#errors: `{"error": {"code", "message", "details"?}}`, served as JSON.
"""

import schemathesis

# The body `cargo lambda watch` answers with when it cannot turn a request into a Lambda
# event; the function never sees such a request.
EMULATOR_500 = b'"type":"https://httpstatuses.com/500"'


def _utf8(raw):
    if raw is None:
        return True
    if isinstance(raw, str):
        # `requests` sends header strings as Latin-1 bytes.
        raw = raw.encode("latin-1", errors="replace")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    """Drops one failure: the local emulator's own 500 for a request with a header value or
    a body that is not UTF-8, which it cannot put into a Lambda event (a limit of the local
    stack, not of the functions: the request never reaches them)."""
    request = response.request
    unpassable = not _utf8(request.body) or not all(_utf8(v) for v in request.headers.values())
    return not (response.status_code == 500 and EMULATOR_500 in response.content and unpassable)


@schemathesis.check
def error_envelope(ctx, response, case):
    if response.status_code < 400:
        return None
    content_type = ",".join(response.headers.get("content-type", []))
    assert content_type.startswith("application/json"), (
        f"{response.status_code} with content-type {content_type!r}, not the JSON error envelope"
    )
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error"}, (
        f"{response.status_code} body is not {{\"error\": …}}: {body!r}"
    )
    error = body["error"]
    assert isinstance(error, dict), f"`error` is not an object: {error!r}"
    assert set(error) <= {"code", "message", "details"}, f"unexpected keys in `error`: {sorted(error)}"
    assert isinstance(error.get("code"), str) and error["code"], f"`error.code` missing: {error!r}"
    assert isinstance(error.get("message"), str), f"`error.message` missing: {error!r}"
    return None
