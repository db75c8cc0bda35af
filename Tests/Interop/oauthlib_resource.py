"""An OAuth 1.0a protected resource built on oauthlib's ResourceEndpoint (RFC 5849).

Every request to it is checked as a provider checks it: the signature (HMAC-SHA1,
HMAC-SHA256, RSA-SHA1 or PLAINTEXT), the consumer key and access token, the timestamp
window and that no nonce is used twice. It answers 200 with what it verified, or 401 with
`oauth_problem`. The first line on standard output is "READY <port>".

    oauthlib_resource.py CONSUMER_KEY CONSUMER_SECRET TOKEN TOKEN_SECRET RSA_PUBLIC_KEY_PEM_FILE
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from oauthlib.oauth1 import RequestValidator, ResourceEndpoint
from oauthlib.oauth1.rfc5849 import SIGNATURE_HMAC_SHA1, SIGNATURE_HMAC_SHA256, SIGNATURE_PLAINTEXT, SIGNATURE_RSA_SHA1

CONSUMER_KEY, CONSUMER_SECRET, TOKEN, TOKEN_SECRET, RSA_FILE = sys.argv[1:6]
with open(RSA_FILE) as handle:
    RSA_PUBLIC_KEY = handle.read()
SEEN_NONCES = set()


class Validator(RequestValidator):
    enforce_ssl = False
    nonce_length = (20, 64)
    allowed_signature_methods = (SIGNATURE_HMAC_SHA1, SIGNATURE_HMAC_SHA256, SIGNATURE_RSA_SHA1, SIGNATURE_PLAINTEXT)

    @property
    def dummy_client(self):
        return "dummy_client_key_0000000"

    @property
    def dummy_access_token(self):
        return "dummy_access_token_000000"

    def validate_client_key(self, client_key, request):
        return client_key == CONSUMER_KEY

    def validate_access_token(self, client_key, token, request):
        return token == TOKEN

    def validate_timestamp_and_nonce(self, client_key, timestamp, nonce, request, request_token=None,
                                     access_token=None):
        key = (client_key, timestamp, nonce, access_token)
        if key in SEEN_NONCES:
            return False
        SEEN_NONCES.add(key)
        return True

    def validate_realms(self, client_key, token, request, uri=None, realms=None):
        return True

    def get_client_secret(self, client_key, request):
        return CONSUMER_SECRET

    def get_access_token_secret(self, client_key, token, request):
        return TOKEN_SECRET

    def get_rsa_key(self, client_key, request):
        return RSA_PUBLIC_KEY


ENDPOINT = ResourceEndpoint(Validator())


class Handler(BaseHTTPRequestHandler):
    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        uri = "http://" + self.headers["Host"] + self.path
        headers = {name: value for name, value in self.headers.items()}
        valid, request = ENDPOINT.validate_protected_resource_request(uri, self.command, body, headers)
        if valid:
            status = 200
            answer = {"valid": True, "method": request.signature_method, "params": sorted(request.params)}
        else:
            status = 401
            answer = {"valid": False}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if not valid:
            self.send_header("WWW-Authenticate", 'OAuth realm="test", oauth_problem="signature_invalid"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = handle_one
    do_POST = handle_one
    do_PUT = handle_one

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"READY {server.server_address[1]}", flush=True)
server.serve_forever()
