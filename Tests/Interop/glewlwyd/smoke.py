#!/usr/bin/env python3
"""Smoke check of the Glewlwyd fixture, independent of tokenproxy: starts start.py (or uses a
running fixture's JSON line given with --info FILE), then exercises DPoP with nonces at the token
and userinfo endpoints and mutual-TLS client authentication with certificate-bound tokens,
printing each HTTP exchange briefly. Exits 0 when every check holds, 1 otherwise.

    .venv/bin/python Tests/Interop/glewlwyd/smoke.py [--workdir DIR] [--info FILE] [--nonce-counter N]

Needs joserfc (Tests/Interop/requirements.txt); HTTP is the standard library's.
"""
import argparse
import base64
import hashlib
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

from joserfc import jwt
from joserfc.jwk import ECKey

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(condition, what):
    print(("  ok    " if condition else "  FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)
    return condition


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_claims(token):
    """The claims of a JWS compact token, unverified (the fixture signs with HS256)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


class Client:
    """One TLS context per identity (none, a client certificate), HTTP/1.1, a line per exchange."""

    def __init__(self, info, cert=None, key=None):
        self.info = info
        self.context = ssl.create_default_context(cafile=info["ca_file"])
        self.has_cert = bool(cert)
        if cert:
            self.context.load_cert_chain(cert, key)

    def request(self, method, url, headers=None, form=None, label=""):
        parts = urllib.parse.urlsplit(url)
        body = urllib.parse.urlencode(form).encode() if form is not None else None
        headers = dict(headers or {})
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, context=self.context, timeout=15)
        try:
            connection.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
            response = connection.getresponse()
            status, response_headers, payload = response.status, response.headers, response.read()
        finally:
            connection.close()
        text = payload.decode(errors="replace")
        try:
            data = json.loads(text) if text.strip() else None
        except ValueError:
            data = None
        shown = {name: response_headers[name] for name in ("DPoP-Nonce", "WWW-Authenticate") if response_headers.get(name)}
        summary = text if len(text) <= 160 else text[:157] + "..."
        sent = ",".join(sorted(name for name in headers if name in ("Authorization", "DPoP")))
        print(f"  {label or method} {method} {parts.path} [{sent or '-'}{',cert' if self.has_cert else ''}]"
              f" -> {status} {json.dumps(shown) if shown else ''} {summary}", flush=True)
        return status, response_headers, data, text


def client_with_cert(info, cert, key):
    return Client(info, cert, key)


class Prover:
    """DPoP proofs (RFC 9449) with one ES256 key."""

    def __init__(self):
        self.key = ECKey.generate_key("P-256")
        public = self.key.as_dict(private=False)
        self.public_jwk = {name: public[name] for name in ("kty", "crv", "x", "y")}
        canonical = json.dumps(self.public_jwk, sort_keys=True, separators=(",", ":")).encode()
        self.jkt = b64url(hashlib.sha256(canonical).digest())

    def proof(self, method, url, nonce=None, access_token=None, iat=None, jti=None, typ="dpop+jwt"):
        claims = {"jti": jti or str(uuid.uuid4()), "htm": method, "htu": url, "iat": int(iat if iat is not None else time.time())}
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode()).digest())
        return jwt.encode({"typ": typ, "alg": "ES256", "jwk": self.public_jwk}, claims, self.key, algorithms=["ES256"])


def start_fixture(workdir, nonce_counter):
    process = subprocess.Popen([sys.executable, os.path.join(HERE, "start.py"), "--workdir", workdir,
                                "--dpop-nonce-counter", str(nonce_counter)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line:
        process.wait()
        sys.exit(f"the fixture did not start (status {process.returncode})")
    return process, json.loads(line)


def dpop_token_flow(info, client, prover, secret_form, grant_form, label):
    """A token request with a proof without nonce, then with the nonce. Returns (token response, nonce)."""
    token_url = info["token_endpoint"]
    status, headers, data, _ = client.request("POST", token_url, {"DPoP": prover.proof("POST", token_url)},
                                              {**grant_form, **secret_form}, label=f"{label} no-nonce")
    nonce = headers.get("DPoP-Nonce")
    check(status == 400 and (data or {}).get("error") == "use_dpop_nonce" and bool(nonce),
          f"{label}: a proof without nonce gets 400 use_dpop_nonce and a DPoP-Nonce header")
    status, headers, data, _ = client.request("POST", token_url, {"DPoP": prover.proof("POST", token_url, nonce=nonce)},
                                              {**grant_form, **secret_form}, label=f"{label} nonce")
    check(status == 200 and (data or {}).get("token_type", "").lower() == "dpop" and bool((data or {}).get("access_token")),
          f"{label}: with the nonce, 200 and token_type DPoP (got {(data or {}).get('token_type')!r})")
    if status == 200:
        claims = jwt_claims(data["access_token"])
        check(claims.get("cnf", {}).get("jkt") == prover.jkt, f"{label}: the access token (a JWT) has cnf.jkt of the proof key")
        print(f"  info  {label}: response DPoP-Nonce after success: {headers.get('DPoP-Nonce')!r}; "
              f"refresh_token issued: {'refresh_token' in data}; expires_in {data.get('expires_in')}")
    return data if status == 200 else None, headers.get("DPoP-Nonce") or nonce


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", help="fixture directory (default: a temporary one)")
    parser.add_argument("--info", help="JSON line of an already running fixture")
    parser.add_argument("--nonce-counter", type=int, default=100, help="--dpop-nonce-counter of the fixture started")
    args = parser.parse_args()

    process, temporary = None, None
    if args.info:
        with open(args.info) as handle:
            info = json.loads(handle.readline())
    else:
        workdir = args.workdir or tempfile.mkdtemp(prefix="glewlwyd-")
        temporary = None if args.workdir else workdir
        process, info = start_fixture(workdir, args.nonce_counter)
    try:
        run(info)
    finally:
        if process:
            process.stdin.close()
            process.wait(timeout=15)
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
    print(f"\n{len(failures)} failure(s)" + ("".join(f"\n  - {f}" for f in failures) if failures else ""))
    sys.exit(1 if failures else 0)


def run(info):
    plain = Client(info)
    token_url, userinfo_url = info["token_endpoint"], info["userinfo_endpoint"]
    dpop_client = info["clients"]["dpop"]
    user = info["user"]
    basic = "Basic " + base64.b64encode(f"{dpop_client['client_id']}:{dpop_client['client_secret']}".encode()).decode()
    password_grant = {"grant_type": "password", "username": user["username"], "password": user["password"], "scope": info["scope"]}
    cc_grant = {"grant_type": "client_credentials", "scope": info["custom_scope"]}
    post_secret = {"client_id": dpop_client["client_id"], "client_secret": dpop_client["client_secret"]}

    print("\n(a) DPoP at the token endpoint")
    prover = Prover()
    status, headers, data, _ = plain.request("POST", token_url, None, {**cc_grant, **post_secret}, label="no-proof")
    check(status in (400, 401, 403), f"the DPoP-bound client without a proof is refused ({status} {data})")
    tokens, nonce = dpop_token_flow(info, plain, prover, post_secret, password_grant, "password/post")
    cc_tokens, nonce = dpop_token_flow(info, plain, prover, post_secret, cc_grant, "client_credentials/post")

    # client_secret_basic: the secret in the Authorization header.
    class Basic(Client):
        def request(self, method, url, headers=None, form=None, label=""):
            return super().request(method, url, {**(headers or {}), "Authorization": basic}, form, label)
    basic_client = Basic(info)
    status, headers, data, _ = basic_client.request("POST", token_url, {"DPoP": prover.proof("POST", token_url, nonce=nonce)},
                                                    cc_grant, label="cc/basic nonce")
    check(status == 200 and data.get("token_type", "").lower() == "dpop", "client_secret_basic with the current nonce: 200 DPoP")
    nonce = headers.get("DPoP-Nonce") or nonce

    # Quirks: htu, iat, typ, nonce; each proof is made just before its request, with the current nonce.
    for what, make, expect in (
        ("htu without the plugin path", lambda n: prover.proof("POST", info["base_url"] + "/token", nonce=n), 403),
        ("htu with a trailing slash", lambda n: prover.proof("POST", token_url + "/", nonce=n), 403),
        ("htu with localhost instead of 127.0.0.1", lambda n: prover.proof("POST", token_url.replace("127.0.0.1", "localhost"), nonce=n), 403),
        ("htu with a query string", lambda n: prover.proof("POST", token_url + "?a=b", nonce=n), 403),
        ("iat 30 s old", lambda n: prover.proof("POST", token_url, nonce=n, iat=time.time() - 30), 200),
        ("iat 90 s old", lambda n: prover.proof("POST", token_url, nonce=n, iat=time.time() - 90), 403),
        ("iat 5 s ahead", lambda n: prover.proof("POST", token_url, nonce=n, iat=time.time() + 5), 200),
        ("iat 30 s ahead", lambda n: prover.proof("POST", token_url, nonce=n, iat=time.time() + 30), 403),
        ("typ JWT", lambda n: prover.proof("POST", token_url, nonce=n, typ="JWT"), 403),
        ("a wrong nonce", lambda n: prover.proof("POST", token_url, nonce="not-the-nonce"), 400),
        ("a wrong nonce and a wrong htu", lambda n: prover.proof("POST", token_url + "/", nonce="not-the-nonce"), 403),
    ):
        status, headers, data, _ = plain.request("POST", token_url, {"DPoP": make(nonce)}, {**cc_grant, **post_secret}, label=what)
        check(status == expect, f"token request with {what}: {status} (expected {expect}) {data}")
        nonce = headers.get("DPoP-Nonce") or nonce
    replayed = prover.proof("POST", token_url, nonce=nonce)
    _, headers, _, _ = plain.request("POST", token_url, {"DPoP": replayed}, {**cc_grant, **post_secret}, label="replay#1")
    nonce = headers.get("DPoP-Nonce") or nonce
    status, headers, data, _ = plain.request("POST", token_url, {"DPoP": replayed}, {**cc_grant, **post_secret}, label="replay#2")
    check(status != 200, f"a replayed proof (same jti) is refused: {status} {data}")
    nonce = headers.get("DPoP-Nonce") or nonce

    if tokens and tokens.get("refresh_token"):
        print("\n(a') refresh_token grant")
        form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], **post_secret}
        status, headers, data, _ = plain.request("POST", token_url, None, form, label="refresh no-proof")
        check(status != 200, f"refresh without a proof is refused: {status} {data}")
        other = Prover()
        status, headers, data, _ = plain.request("POST", token_url, {"DPoP": other.proof("POST", token_url, nonce=nonce)}, form,
                                                 label="refresh other-key")
        check(status != 200, f"refresh with another key's proof is refused: {status} {data}")
        nonce = headers.get("DPoP-Nonce") or nonce
        status, headers, data, _ = plain.request("POST", token_url, {"DPoP": prover.proof("POST", token_url, nonce=nonce)}, form,
                                                 label="refresh same-key")
        check(status == 200 and data.get("token_type", "").lower() == "dpop", f"refresh with the same key: 200 DPoP")
        nonce = headers.get("DPoP-Nonce") or nonce
        if status == 200:
            check(jwt_claims(data["access_token"]).get("cnf", {}).get("jkt") == prover.jkt, "the refreshed access token has the same cnf.jkt")
            print(f"  info  refresh response keys (no new refresh_token: the same one stays valid): {sorted(data)}")

    print("\n(b) DPoP at the userinfo endpoint")
    access_token = tokens["access_token"] if tokens else ""
    for method in ("GET", "POST"):
        status, headers, data, _ = plain.request(method, userinfo_url, {"Authorization": f"DPoP {access_token}",
                                                                        "DPoP": prover.proof(method, userinfo_url, access_token=access_token)},
                                                 {} if method == "POST" else None, label=f"userinfo {method} no-nonce")
        resource_nonce = headers.get("DPoP-Nonce")
        check(status == 401 and "use_dpop_nonce" in (headers.get("WWW-Authenticate") or "") and bool(resource_nonce),
              f"userinfo {method} without nonce: 401, WWW-Authenticate DPoP error=\"use_dpop_nonce\", DPoP-Nonce")
        print(f"  info  resource nonce == token endpoint nonce: {resource_nonce == nonce}")
        nonce = resource_nonce or nonce
        status, headers, data, _ = plain.request(method, userinfo_url, {"Authorization": f"DPoP {access_token}",
                                                                        "DPoP": prover.proof(method, userinfo_url, nonce=nonce, access_token=access_token)},
                                                 {} if method == "POST" else None, label=f"userinfo {method} nonce")
        check(status == 200 and (data or {}).get("sub"), f"userinfo {method} with the nonce: 200 and claims")
        nonce = headers.get("DPoP-Nonce") or nonce
    for what, headers_sent in (
        ("Bearer scheme, no proof", {"Authorization": f"Bearer {access_token}"}),
        ("DPoP scheme, no proof", {"Authorization": f"DPoP {access_token}"}),
        ("Bearer scheme with a proof", {"Authorization": f"Bearer {access_token}",
                                        "DPoP": prover.proof("GET", userinfo_url, nonce=nonce, access_token=access_token)}),
        ("proof without ath", {"Authorization": f"DPoP {access_token}", "DPoP": prover.proof("GET", userinfo_url, nonce=nonce)}),
        ("proof with htm POST on GET", {"Authorization": f"DPoP {access_token}",
                                        "DPoP": prover.proof("POST", userinfo_url, nonce=nonce, access_token=access_token)}),
    ):
        status, headers, data, text = plain.request("GET", userinfo_url, headers_sent, label=what)
        check(status == 401, f"userinfo with {what}: {status} (expected 401)")
        nonce = headers.get("DPoP-Nonce") or nonce

    status, headers, data, _ = plain.request("GET", userinfo_url, {"Authorization": f"DPoP {access_token}",
                                          "DPoP": Prover().proof("GET", userinfo_url, nonce=nonce, access_token=access_token)},
                                          label="proof of another key")
    print(f"  info  userinfo with a valid proof of ANOTHER key (Glewlwyd does not compare it with cnf.jkt): {status}")
    nonce = headers.get("DPoP-Nonce") or nonce

    print("\n(a'') the client without DPoP binding")
    bearer = info["clients"]["bearer"]
    bearer_secret = {"client_id": bearer["client_id"], "client_secret": bearer["client_secret"]}
    status, headers, data, _ = plain.request("POST", token_url, None, {**password_grant, **bearer_secret}, label="bearer no-proof")
    check(status == 200 and data.get("token_type") == "bearer", f"no proof: 200, token_type {(data or {}).get('token_type')!r}")
    if status == 200:
        status, headers, udata, _ = plain.request("GET", userinfo_url, {"Authorization": f"Bearer {data['access_token']}"}, label="userinfo bearer")
        check(status == 200, "its Bearer token works at userinfo")
    other = Prover()
    status, headers, data, _ = plain.request("POST", token_url, {"DPoP": other.proof("POST", token_url)}, {**cc_grant, **bearer_secret},
                                             label="bearer client proof")
    bearer_nonce = headers.get("DPoP-Nonce")
    print(f"  info  a proof without nonce from the unbound client: {status}; the nonce is per client: {bearer_nonce != nonce}")
    if bearer_nonce:
        status, headers, data, _ = plain.request("POST", token_url, {"DPoP": other.proof("POST", token_url, nonce=bearer_nonce)},
                                                 {**cc_grant, **bearer_secret}, label="bearer client nonce")
        check(status == 200 and data.get("token_type") == "DPoP", "with its nonce: 200 DPoP (DPoP is optional for it)")

    if info["dpop"]["nonce_counter"] <= 10:
        print(f"\n(d) nonce rotation (oauth-dpop-nonce-counter {info['dpop']['nonce_counter']})")
        rotation_nonce, successes, rotated = nonce, 0, None
        for attempt in range(info["dpop"]["nonce_counter"] + 3):
            status, headers, data, _ = plain.request("POST", token_url, {"DPoP": prover.proof("POST", token_url, nonce=rotation_nonce)},
                                                     {**cc_grant, **post_secret}, label=f"rotation#{attempt}")
            if status == 200:
                successes += 1
                if headers.get("DPoP-Nonce"):
                    rotated = successes
                    old, rotation_nonce = rotation_nonce, headers["DPoP-Nonce"]
                    break
            elif headers.get("DPoP-Nonce"):
                rotation_nonce = headers["DPoP-Nonce"]
        print(f"  info  the success response #{rotated} (counted from the nonce in hand) carried a new DPoP-Nonce")
        if rotated:
            status, headers, data, _ = plain.request("POST", token_url, {"DPoP": prover.proof("POST", token_url, nonce=old)},
                                                     {**cc_grant, **post_secret}, label="old nonce")
            check(status == 400 and headers.get("DPoP-Nonce") == rotation_nonce, "the previous nonce is refused at once: 400 use_dpop_nonce with the new one")

    print("\n(c) mutual TLS: tls_client_auth and certificate-bound tokens")
    mtls = info["clients"]["mtls"]
    with_cert = client_with_cert(info, mtls["cert_file"], mtls["key_file"])
    with_other = client_with_cert(info, info["other_client_cert_file"], info["other_client_key_file"])
    cc_mtls = {**cc_grant, "client_id": mtls["client_id"]}
    status, headers, data, _ = plain.request("POST", token_url, None, cc_mtls, label="mtls no-cert")
    check(status in (400, 401, 403), f"client_id without secret nor certificate is refused: {status} {data}")
    status, headers, data, _ = with_other.request("POST", token_url, None, cc_mtls, label="mtls other-cert")
    check(status in (400, 401, 403), f"a CA-signed certificate of another subject is refused: {status} {data}")
    status, headers, data, _ = with_cert.request("POST", token_url, None, cc_mtls, label="mtls cc")
    bound = None
    if check(status == 200, f"client_credentials with the client certificate: 200 (token_type {(data or {}).get('token_type')!r})"):
        bound = data["access_token"]
        claims = jwt_claims(bound)
        check(claims.get("cnf", {}).get("x5t#S256") == mtls["x5t#S256"],
              f"the access token is bound: cnf.x5t#S256 = SHA-256 of the client certificate ({claims.get('cnf')})")
    status, headers, data, _ = with_cert.request("POST", token_url, None,
                                                 {**password_grant, "client_id": mtls["client_id"]}, label="mtls password")
    if check(status == 200, "password grant with the client certificate: 200"):
        check(jwt_claims(data["access_token"]).get("cnf", {}).get("x5t#S256") == mtls["x5t#S256"], "... its access token is bound too")
        print(f"  info  mTLS password grant: refresh_token issued: {'refresh_token' in data}")
        user_bound = data["access_token"]
        if data.get("refresh_token"):
            form = {"grant_type": "refresh_token", "refresh_token": data["refresh_token"], "client_id": mtls["client_id"]}
            status, _, rdata, _ = plain.request("POST", token_url, None, form, label="mtls refresh no-cert")
            print(f"  info  refresh of the mTLS client's token without certificate: {status}")
            status, _, rdata, _ = with_cert.request("POST", token_url, None, form, label="mtls refresh cert")
            check(status == 200, f"refresh with the certificate: 200")
            if status == 200:
                print(f"  info  refreshed token cnf: {jwt_claims(rdata['access_token']).get('cnf')}")
        for what, client in (("no certificate", plain), ("the other certificate", with_other), ("the bound certificate", with_cert)):
            status, _, udata, _ = client.request("GET", userinfo_url, {"Authorization": f"Bearer {user_bound}"}, label=f"userinfo {what}")
            print(f"  info  userinfo with the certificate-bound token and {what}: {status}")
    if bound:
        for what, client in (("no certificate", plain), ("the bound certificate", with_cert)):
            status, _, idata, _ = client.request("POST", info["introspection_endpoint"], None,
                                                 {"token": bound, "client_id": mtls["client_id"]}, label=f"introspect {what}")
            print(f"  info  introspection with {what}: {status} {idata}")


if __name__ == "__main__":
    main()
