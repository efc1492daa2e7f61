"""Planted credentials, one per supported kind, and look-alikes that must stay as they are.

Values are made from a seeded generator so they have a real credential's randomness (the
rules check entropy) without being anyone's credential.
"""

from __future__ import annotations

import random
import string
import uuid

_R = random.Random(18)
_ALNUM = string.ascii_letters + string.digits


def _pick(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


_KEY_BODY = "\n".join(_pick(64, _ALNUM + "+/") for _ in range(12))

# kind → (the text it is planted in, the secret value itself)
PLANTED: dict[str, tuple[str, str]] = {}


def _plant(kind: str, value: str, text: str | None = None) -> None:
    PLANTED[kind] = (text if text is not None else f"here it is: {value} (keep it safe)", value)


_plant("aws_access_token", "AKIA" + _pick(16, string.ascii_uppercase + "234567"))
_plant("github_pat", "ghp_" + _pick(36))
_plant("gitlab_pat", "glpat-" + _pick(20))
_plant("slack_bot_token", "xoxb-1234567890-1234567890123-" + _pick(24, string.ascii_lowercase))
_plant("stripe_access_token", "sk_live_" + _pick(24))
_plant("openai_api_key", "sk-" + _pick(20) + "T3BlbkFJ" + _pick(20))
_plant("anthropic_api_key", "sk-ant-api03-" + _pick(93, _ALNUM + "_-") + "AA")
_plant("gcp_api_key", "AIza" + _pick(35))
_plant("npm_access_token", "npm_" + _pick(36, string.ascii_lowercase + string.digits))
_plant("pypi_upload_token", "pypi-AgEIcHlwaS5vcmc" + _pick(70, _ALNUM + "-_"))
_secret = f"-----BEGIN RSA PRIVATE KEY-----\n{_KEY_BODY}\n-----END RSA PRIVATE KEY-----"
_plant("private_key", _secret, f"cat id_rsa\n{_secret}\n")
_pw = _pick(14)
_plant("url_password", _pw, f"connecting to postgres://deploy:{_pw}@db.internal:5432/app")
_env = "hunter2" * 3  # low entropy: only the assignment rule takes it
_plant("secret_assignment", _env, f"cat .env\nDEBUG=1\nDATABASE_PASSWORD={_env}\nPORT=8080")
_generic = _pick(32)
_plant("generic_api_key", _generic, f'config = {{"service_api_key": "{_generic}"}}')


def lookalike_shapes(n: int, seed: int = 7) -> dict[str, list[str]]:
    """*n* texts of each shape of random-looking non-credential a transcript is full of, in the
    context it comes in (a ``git log``, a tool result's JSON, a lockfile). None may be redacted.

    The shapes, and why each is here: a commit SHA (full and short, as git prints them); a
    UUID (session and request ids, JSON keys included); base64 image data (Claude's image
    blocks and data: URLs); lockfile hashes (Cargo.lock / poetry.lock ``sha256:``, npm and
    yarn ``sha512-`` integrity, go.sum ``h1:``); a content digest (``sha256sum`` output, a
    container image digest). The values are random, so each text is a fresh draw of its
    shape: the rate measured is the rules' rate on the shape, not on a few lucky strings.
    """
    r = random.Random(seed)
    hexd = "0123456789abcdef"
    b64 = _ALNUM + "+/"

    def pick(k: int, alphabet: str) -> str:
        return "".join(r.choice(alphabet) for _ in range(k))

    out: dict[str, list[str]] = {
        "git_sha": [], "uuid": [], "base64_image": [], "lockfile_hash": [], "digest": [],
    }  # fmt: skip
    for _ in range(n):
        sha = pick(40, hexd)
        u = uuid.UUID(int=r.getrandbits(128), version=4)
        png = "iVBORw0KGgoAAAANSUhEUgAA" + pick(400 + r.randrange(2000), b64)
        jpeg = "/9j/4AAQSkZJRgABAQ" + pick(400 + r.randrange(2000), b64)
        sri = pick(86, b64) + "=="
        out["git_sha"] += [
            f"commit {sha}\nAuthor: A <a@example.com>",
            f"git checkout {sha[:12]} && git log {sha}",
            f"{sha[:7]} fix the flaky test\n{pick(7, hexd)} bump deps",
        ]
        out["uuid"] += [
            f'{{"sessionId": "{u}", "id": "{u}"}}',
            f"request id {u} finished",
            f'{{"parentUuid": "{u}", "uuid": "{uuid.UUID(int=r.getrandbits(128), version=4)}"}}',
        ]
        out["base64_image"] += [
            f'{{"type": "image", "source": {{"data": "data:image/png;base64,{png}"}}}}',
            f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/jpeg", '
            f'"data": "{jpeg}"}}}}',
            f'<img src="data:image/png;base64,{png}">',
        ]
        out["lockfile_hash"] += [
            f'[[package]]\nname = "x"\nversion = "1.0.0"\nchecksum = "{pick(64, hexd)}"',
            f'{{name = "x-1.0.tar.gz", hash = "sha256:{pick(64, hexd)}"}}',
            f'"resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz",\n'
            f'"integrity": "sha512-{sri}"',
            f'x@^1.0.0:\n  version "1.0.0"\n  integrity sha512-{sri}',
            f"golang.org/x/text v0.3.7 h1:{pick(43, b64)}=",
        ]
        out["digest"] += [
            f"{pick(64, hexd)}  dist/app.tar.gz",
            f"docker pull ghcr.io/acme/app@sha256:{pick(64, hexd)}",
        ]
    return out


def lookalikes(n: int, seed: int = 7) -> list[str]:
    """Every text of ``lookalike_shapes``, in one list."""
    return [t for texts in lookalike_shapes(n, seed).values() for t in texts]
