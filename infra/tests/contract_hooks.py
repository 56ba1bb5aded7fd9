"""Schemathesis hooks for infra/tests/contract.sh: every error answer is the JSON envelope.

`response_schema_conformance` checks the statuses the document lists; this check also
holds the ones it does not (a 405, a 4xx the document forgot) to the contract of
docs/api.md#errors: `{"error": {"code", "message", "details"?}}`, served as JSON.
"""

import schemathesis


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
