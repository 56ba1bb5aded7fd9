"""Prints a dev token for the local stack: HS256 with its key, as the chat client mints it.

    python3 infra/local/dev_token.py <secret file> <user>

For the scripts that talk to `make dev` from outside (the contract check, the smoke test,
`make sam-invoke`), each with a user of its own so they never touch a developer's chats.
One hour.
"""

import base64
import hashlib
import hmac
import json
import sys
import time


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(secret_file, user):
    with open(secret_file, encoding="utf-8") as f:
        secret = f.read().strip().encode()
    now = int(time.time())
    claims = {"sub": user, "iss": "http://127.0.0.1/dev", "aud": "local-dev",
              "iat": now, "exp": now + 3600}
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(
        json.dumps(claims).encode())
    return head + "." + b64(hmac.new(secret, head.encode(), hashlib.sha256).digest())


if __name__ == "__main__":
    print(token(*sys.argv[1:3]))
