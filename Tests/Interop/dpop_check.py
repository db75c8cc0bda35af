#!/usr/bin/env python3
"""Checks DPoP proofs (RFC 9449 §4.3) with joserfc, independently of tokenproxy's own code.

Reads a JSON list from the file named by its argument (or stdin), each item {"proof", "method", "url", "access_token" (or null),
"nonce" (or null), "jkt"}, and prints one JSON object: {"checked": N, "errors": [...]}. Each
proof must be a compact JWS of typ dpop+jwt whose signature verifies with the public JWK in its
own header (no private members), with htm, htu, a fresh iat, a jti, ath when a token goes with
it, the expected nonce, and a JWK whose RFC 7638 thumbprint is the expected jkt.
"""
import base64
import hashlib
import json
import sys
import time

from joserfc import jws
from joserfc.jwk import import_key
from joserfc.jws import JWSRegistry


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def check(item):
    proof = item["proof"]
    header_part = proof.split(".")[0]
    header = json.loads(base64.urlsafe_b64decode(header_part + "=" * (-len(header_part) % 4)))
    if header.get("typ") != "dpop+jwt":
        return "typ is not dpop+jwt"
    jwk = header.get("jwk") or {}
    if any(name in jwk for name in ("d", "p", "q", "dp", "dq", "qi")):
        return "the header's jwk holds private key members"
    key = import_key(jwk)
    algorithm = header.get("alg")
    if algorithm not in ("ES256", "RS256", "PS256", "EdDSA"):
        return f"unexpected alg {algorithm}"
    # A proof's header carries the whole public key: an RSA one is longer than joserfc's
    # default bound of 512 bytes.
    registry = JWSRegistry(algorithms=[algorithm])
    registry.max_header_length = 4096
    try:
        verified = jws.deserialize_compact(proof, key, registry=registry)
    except Exception as error:  # a bad signature or a malformed JWS
        return f"does not verify: {error!r}"
    claims = json.loads(verified.payload)
    if claims.get("htm") != item["method"]:
        return f"htm {claims.get('htm')!r} is not {item['method']!r}"
    if claims.get("htu") != item["url"]:
        return f"htu {claims.get('htu')!r} is not {item['url']!r}"
    if not isinstance(claims.get("iat"), int) or abs(claims["iat"] - time.time()) > 120:
        return "iat is not now"
    if not isinstance(claims.get("jti"), str) or len(claims["jti"]) < 16:
        return "no jti of 16 characters or more"
    token = item.get("access_token")
    expected_ath = b64url(hashlib.sha256(token.encode()).digest()) if token else None
    if claims.get("ath") != expected_ath:
        return "ath does not match the access token"
    if claims.get("nonce") != item.get("nonce"):
        return f"nonce {claims.get('nonce')!r} is not {item.get('nonce')!r}"
    if key.thumbprint() != item["jkt"]:
        return "the key's RFC 7638 thumbprint is not the expected jkt"
    return None


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as source:
            items = json.load(source)
    else:
        items = json.load(sys.stdin)
    errors = []
    for index, item in enumerate(items):
        problem = check(item)
        if problem:
            errors.append(f"proof {index}: {problem}")
    print(json.dumps({"checked": len(items), "errors": errors}))


if __name__ == "__main__":
    main()
