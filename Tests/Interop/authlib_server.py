"""An OAuth 2 authorization server built on Authlib (a third-party implementation from
PyPI), plus a protected API that accepts only its tokens. tokenproxy's interoperability
tests start it on a free loopback port; it prints "READY <port>" once listening.

Clients: "interop-client" / "interop-secret" (client_secret_basic), user "alice" / "wonderland".
Tokens live 30 s; refresh tokens rotate (the old one is revoked when a new one is issued).
"""
import sys
import time
import secrets
import threading

from flask import Flask, request, jsonify
from werkzeug.serving import make_server
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import grants

app = Flask(__name__)
app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {
    "client_credentials": 30,
    "password": 30,
    # Short: a proxy uses a token for half its lifetime when that is under its refresh skew,
    # so the rotation test sees a refresh every second.
    "refresh_token": 2,
}
lock = threading.Lock()
tokens = {}  # access_token -> record
refresh_index = {}  # refresh_token -> record
counts = {"token_requests": 0}


class Client:
    client_id = "interop-client"
    client_secret = "interop-secret"

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return None

    def get_allowed_scope(self, scope):
        return scope or ""

    def check_redirect_uri(self, redirect_uri):
        return False

    def check_client_secret(self, client_secret):
        return secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type):
        return False

    def check_grant_type(self, grant_type):
        return grant_type in ("client_credentials", "password", "refresh_token")


CLIENT = Client()


class User:
    def __init__(self, name):
        self.name = name

    def get_user_id(self):
        return self.name


class TokenRecord:
    def __init__(self, token, user):
        self.access_token = token["access_token"]
        self.refresh_token = token.get("refresh_token")
        self.scope = token.get("scope", "")
        self.expires_at = time.time() + token["expires_in"]
        self.user = user
        self.revoked = False

    def check_client(self, client):
        return client.get_client_id() == CLIENT.client_id

    def get_scope(self):
        return self.scope

    def get_expires_in(self):
        return int(self.expires_at - time.time())

    def is_revoked(self):
        return self.revoked

    def is_expired(self):
        return time.time() >= self.expires_at


def query_client(client_id):
    return CLIENT if client_id == CLIENT.client_id else None


def save_token(token, req):
    user = req.user if req.user else None
    record = TokenRecord(token, user)
    with lock:
        tokens[record.access_token] = record
        if record.refresh_token:
            refresh_index[record.refresh_token] = record


AUTH_METHODS = ["client_secret_basic", "client_secret_post"]


class ClientCredentialsGrant(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS


class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    def authenticate_user(self, username, password):
        if username == "alice" and password == "wonderland":
            return User("alice")
        return None


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        with lock:
            record = refresh_index.get(refresh_token)
        if record and not record.revoked:
            return record
        return None

    def authenticate_user(self, credential):
        return credential.user

    def revoke_old_credential(self, credential):
        with lock:
            credential.revoked = True


server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
server.register_grant(ClientCredentialsGrant)
server.register_grant(PasswordGrant)
server.register_grant(RefreshTokenGrant)


@app.route("/oauth/token", methods=["POST"])
def issue_token():
    with lock:
        counts["token_requests"] += 1
    return server.create_token_response()


@app.route("/api/<path:rest>", methods=["GET", "POST"])
def api(rest):
    header = request.headers.get("Authorization", "")
    token = header[7:] if header.startswith("Bearer ") else ""
    with lock:
        record = tokens.get(token)
    if not record or record.is_expired():
        return jsonify(error="invalid_token"), 401, {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    return jsonify(ok=True, path="/" + rest, user=record.user.name if record.user else None)


@app.route("/stats")
def stats():
    with lock:
        return jsonify(token_requests=counts["token_requests"])


if __name__ == "__main__":
    http = make_server("127.0.0.1", 0, app, threaded=True)
    print("READY %d" % http.server_port, flush=True)
    http.serve_forever()
