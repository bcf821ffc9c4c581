"""Realistic-looking but fake secrets, one per kind the redaction knows (tests/test_redact.py, the providers'
tests): split so that this file itself does not look like a leak."""

from __future__ import annotations

OPENAI = "sk-" + "proj-" + "Q3vT9xLm2KpR7wYz4NbC8dFgH1jKlMnOpQrStUvWx"
OPENAI_OLD = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4"
ANTHROPIC = "sk-" + "ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA_-AbCdEfGh"
GOOGLE = "AI" + "zaSyD4f8Gh2Jk6Lm0Np4Qr8St2Uv6Wx0Yz3Ab"
AWS_ID = "AK" + "IAZ7QW3ERT5YUI9OPA"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "9Zx8Yw7Vu6"
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
GITLAB = "gl" + "pat-" + "xY12zW34vU56tS78rQ90"
SLACK = "xo" + "xb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOp"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx\n-----END OPENSSH PRIVATE KEY-----"
