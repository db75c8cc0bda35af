"""An OAuth 1.0a provider for the three-legged login, built on oauthlib's endpoints (RFC 5849).

    POST /request_token   RequestTokenEndpoint: temporary credentials for a callback or "oob"
    GET  /authorize       AuthorizationEndpoint: the person's approval, given at once; the
                          browser goes to the callback with oauth_token and oauth_verifier, or
                          for "oob" the page shows the verifier (as a form-encoded body)
    POST /access_token    AccessTokenEndpoint: the verifier exchanged for the token pair
    GET  /_state          what was issued, as JSON (counts, the verifiers' use, and the token
                          the last accepted resource request was signed with)
    POST /_revoke         revokes every access token issued so far (the resource then answers
                          401 with oauth_problem=token_rejected)
    anything else         ResourceEndpoint: 200 when signed with a token this provider issued

Every signature, nonce, timestamp, temporary token and verifier is checked as a provider checks
them. The first line on standard output is "READY <port>".

    oauthlib_provider.py CONSUMER_KEY CONSUMER_SECRET RSA_PUBLIC_KEY_PEM_FILE [FAULT]

FAULT makes the provider misbehave: "unconfirmed" leaves oauth_callback_confirmed out of the
request-token answer; "refuse_access" answers the access-token request with 401 and
oauth_problem=permission_denied.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode

from oauthlib.oauth1 import (AccessTokenEndpoint, AuthorizationEndpoint, RequestTokenEndpoint, RequestValidator,
                             ResourceEndpoint)
from oauthlib.oauth1.rfc5849 import SIGNATURE_HMAC_SHA1, SIGNATURE_HMAC_SHA256, SIGNATURE_PLAINTEXT, SIGNATURE_RSA_SHA1

CONSUMER_KEY, CONSUMER_SECRET, RSA_FILE = sys.argv[1:4]
FAULT = sys.argv[4] if len(sys.argv) > 4 else ""
with open(RSA_FILE) as handle:
    RSA_PUBLIC_KEY = handle.read()

LOCK = threading.Lock()
SEEN_NONCES = set()
REQUEST_TOKENS = {}  # token -> {"secret", "callback", "verifier", "used"}
ACCESS_TOKENS = {}  # token -> secret
COUNTS = {"request_tokens": 0, "authorizations": 0, "access_tokens": 0, "resource_requests": 0}
LAST_TOKEN = {"value": None}


class Validator(RequestValidator):
    enforce_ssl = False
    nonce_length = (20, 64)
    allowed_signature_methods = (SIGNATURE_HMAC_SHA1, SIGNATURE_HMAC_SHA256, SIGNATURE_RSA_SHA1, SIGNATURE_PLAINTEXT)

    @property
    def dummy_client(self):
        return "dummy_client_key_0000000"

    @property
    def dummy_request_token(self):
        return "dummy_request_token_00000"

    @property
    def dummy_access_token(self):
        return "dummy_access_token_000000"

    def validate_client_key(self, client_key, request):
        return client_key == CONSUMER_KEY

    def get_client_secret(self, client_key, request):
        return CONSUMER_SECRET

    def get_rsa_key(self, client_key, request):
        return RSA_PUBLIC_KEY

    def validate_timestamp_and_nonce(self, client_key, timestamp, nonce, request, request_token=None,
                                     access_token=None):
        key = (client_key, timestamp, nonce, request_token, access_token)
        with LOCK:
            if key in SEEN_NONCES:
                return False
            SEEN_NONCES.add(key)
        return True

    def get_default_realms(self, client_key, request):
        return []

    def validate_requested_realms(self, client_key, realms, request):
        return True

    def validate_redirect_uri(self, client_key, redirect_uri, request):
        # Loopback callbacks on any port (RFC 8252 §7.3), or out of band.
        return redirect_uri == "oob" or redirect_uri.startswith("http://127.0.0.1:")

    def save_request_token(self, token, request):
        with LOCK:
            REQUEST_TOKENS[token["oauth_token"]] = {
                "secret": token["oauth_token_secret"], "callback": request.redirect_uri, "verifier": None,
                "used": False,
            }
            COUNTS["request_tokens"] += 1

    def verify_request_token(self, token, request):
        with LOCK:
            return token in REQUEST_TOKENS and not REQUEST_TOKENS[token]["used"]

    def verify_realms(self, token, realms, request):
        return True

    def get_realms(self, token, request):
        return []

    def get_redirect_uri(self, token, request):
        with LOCK:
            return REQUEST_TOKENS[token]["callback"]

    def save_verifier(self, token, verifier, request):
        with LOCK:
            REQUEST_TOKENS[token]["verifier"] = verifier["oauth_verifier"]
            COUNTS["authorizations"] += 1

    def validate_request_token(self, client_key, token, request):
        with LOCK:
            return token in REQUEST_TOKENS and not REQUEST_TOKENS[token]["used"]

    def get_request_token_secret(self, client_key, token, request):
        with LOCK:
            entry = REQUEST_TOKENS.get(token)
            return entry["secret"] if entry else "dummy"

    def validate_verifier(self, client_key, token, verifier, request):
        with LOCK:
            entry = REQUEST_TOKENS.get(token)
            return bool(entry and entry["verifier"] and entry["verifier"] == verifier)

    def invalidate_request_token(self, client_key, request_token, request):
        with LOCK:
            if request_token in REQUEST_TOKENS:
                REQUEST_TOKENS[request_token]["used"] = True

    def save_access_token(self, token, request):
        with LOCK:
            ACCESS_TOKENS[token["oauth_token"]] = token["oauth_token_secret"]
            COUNTS["access_tokens"] += 1

    def validate_access_token(self, client_key, token, request):
        with LOCK:
            return token in ACCESS_TOKENS

    def get_access_token_secret(self, client_key, token, request):
        with LOCK:
            return ACCESS_TOKENS.get(token, "dummy")

    def validate_realms(self, client_key, token, request, uri=None, realms=None):
        return True


VALIDATOR = Validator()
REQUEST_TOKEN = RequestTokenEndpoint(VALIDATOR)
AUTHORIZATION = AuthorizationEndpoint(VALIDATOR)
ACCESS_TOKEN = AccessTokenEndpoint(VALIDATOR)
RESOURCE = ResourceEndpoint(VALIDATOR)


class Handler(BaseHTTPRequestHandler):
    def answer(self, status, headers, body):
        data = body.encode() if isinstance(body, str) else (body or b"")
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        uri = "http://" + self.headers["Host"] + self.path
        headers = {name: value for name, value in self.headers.items()}
        path = self.path.split("?")[0]
        if path == "/request_token":
            out_headers, out_body, status = REQUEST_TOKEN.create_request_token_response(uri, self.command, body,
                                                                                        headers)
            if FAULT == "unconfirmed" and status == 200:
                out_body = urlencode([pair for pair in parse_qsl(out_body) if pair[0] != "oauth_callback_confirmed"])
            self.answer(status, {"Content-Type": "application/x-www-form-urlencoded"}, out_body)
        elif path == "/authorize":
            try:
                out_headers, out_body, status = AUTHORIZATION.create_authorization_response(uri, self.command, body,
                                                                                            headers)
            except Exception as error:  # oauthlib raises for an unknown or spent token
                out_headers, out_body, status = {}, f"error={type(error).__name__}", 400
            self.answer(status, out_headers, out_body)
        elif path == "/access_token":
            if FAULT == "refuse_access":
                self.answer(401, {"Content-Type": "application/x-www-form-urlencoded"},
                            "oauth_problem=permission_denied&oauth_problem_advice=secret+" + CONSUMER_SECRET)
                return
            out_headers, out_body, status = ACCESS_TOKEN.create_access_token_response(uri, self.command, body, headers)
            # Some providers label the form-encoded answer text/html.
            self.answer(status, {"Content-Type": "text/html; charset=utf-8"}, out_body)
        elif path == "/_state":
            with LOCK:
                state = dict(COUNTS)
                state["verifiers_pending"] = sum(1 for entry in REQUEST_TOKENS.values()
                                                 if entry["verifier"] and not entry["used"])
                state["last_resource_token"] = LAST_TOKEN["value"]
            self.answer(200, {"Content-Type": "application/json"}, json.dumps(state))
        elif path == "/_revoke":
            with LOCK:
                ACCESS_TOKENS.clear()
            self.answer(204, {}, b"")
        else:
            valid, request = RESOURCE.validate_protected_resource_request(uri, self.command, body, headers)
            with LOCK:
                COUNTS["resource_requests"] += 1
                if valid:
                    LAST_TOKEN["value"] = request.resource_owner_key
            answer = json.dumps({"valid": valid})
            challenge = {} if valid else {"WWW-Authenticate": 'OAuth realm="test", oauth_problem="token_rejected"'}
            self.answer(200 if valid else 401, {"Content-Type": "application/json", **challenge}, answer)

    do_GET = handle_one
    do_POST = handle_one

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"READY {server.server_address[1]}", flush=True)
server.serve_forever()
