#!/usr/bin/env python3
"""Starts a real Glewlwyd (the Debian package `glewlwyd`, an OAuth 2 / OpenID Connect server
written in C) on loopback, over TLS, and provisions it through its admin API for tokenproxy's
interoperability tests.

    python3 start.py --workdir DIR [--port PORT] [--timeout SECONDS] [--ignore-stdin]

Everything lives in DIR (created if missing; the database, configuration, certificates and log
are rewritten at each start): a throwaway CA, a server certificate for 127.0.0.1/localhost,
client certificates, an SQLite database initialised from the package's schema, glewlwyd.conf
and glewlwyd.log. Glewlwyd runs as a child process. Once it is provisioned, one JSON line is
printed on stdout (see README.md); the script then stays until its stdin closes (unless
--ignore-stdin), or it gets SIGTERM/SIGINT, and stops Glewlwyd. If Glewlwyd dies, the script
exits with status 1. Errors go to stderr, with the tail of Glewlwyd's log, and exit status 1.

Only the Python standard library is used; `openssl` must be on PATH.
"""
import argparse
import base64
import ctypes
import gzip
import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

GLEWLWYD = shutil.which("glewlwyd") or "/usr/bin/glewlwyd"
SCHEMA_CANDIDATES = (
    "/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz",
    "/usr/share/doc/glewlwyd/database/init.sqlite3.sql",
    # dbconfig-common's copy: the same tables, without the DROP statements.
    "/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3",
)
MODULE_ROOT = "/usr/lib/glewlwyd"
WEBAPP = "/usr/share/glewlwyd/webapp/"

ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "password"  # the one in the package's init.sqlite3.sql
# Inserted when the schema file has no administrator (dbconfig-common's copy): the same row as
# init.sqlite3.sql, whose salted hash is of "password".
ADMIN_SQL = """
INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, gs_password_max_age) VALUES ('g_admin', 'Glewlwyd administration', 'Access to Glewlwyd''s administration API', 1, 600);
INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, gs_password_max_age) VALUES ('g_profile', 'Glewlwyd profile', 'Access to the user''s profile API', 1, 600);
INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, gs_password_max_age) VALUES ('openid', 'Open ID', 'Open ID Connect scope', 0, 0);
INSERT INTO g_user_module_instance (gumi_module, gumi_order, gumi_name, gumi_display_name, gumi_parameters, gumi_readonly) VALUES ('database', 0, 'database', 'Database backend', '{"use-glewlwyd-connection":true,"data-format":{}}', 0);
INSERT INTO g_client_module_instance (gcmi_module, gcmi_order, gcmi_name, gcmi_display_name, gcmi_parameters, gcmi_readonly) VALUES ('database', 0, 'database', 'Database backend', '{"use-glewlwyd-connection":true,"data-format":{}}', 0);
INSERT INTO g_user (gu_username, gu_name, gu_email, gu_enabled) VALUES ('admin', 'The Administrator', '', 1);
INSERT INTO g_user_password (gu_id, guw_password) VALUES ((SELECT gu_id from g_user WHERE gu_username='admin'), 'fOfvZC/wR2cUSTWbW6YZueGyyDuFqwkoFlcNlRYWJscxYTVOVFJ3VWFHdVJQT0pU');
INSERT INTO g_user_scope (gus_name) VALUES ('g_admin');
INSERT INTO g_user_scope (gus_name) VALUES ('g_profile');
INSERT INTO g_user_scope_user (gu_id, gus_id) VALUES ((SELECT gu_id from g_user WHERE gu_username='admin'), (SELECT gus_id FROM g_user_scope WHERE gus_name='g_admin'));
INSERT INTO g_user_scope_user (gu_id, gus_id) VALUES ((SELECT gu_id from g_user WHERE gu_username='admin'), (SELECT gus_id FROM g_user_scope WHERE gus_name='g_profile'));
"""

PLUGIN_NAME = "oidc"
CUSTOM_SCOPE = "tokenproxy.read"
USER = {"username": "alice", "password": "wonderland-Glewlwyd-1"}
# The client property that, set to "true", makes the plugin refuse this client's token
# requests without a DPoP proof ("oauth-dpop-dpop_bound_access_tokens-property").
DPOP_BOUND_PROPERTY = "dpop_bound_access_tokens"
CLIENTS = {
    # Confidential, secret (basic or post), DPoP mandatory.
    "dpop": {"client_id": "tokenproxy-dpop", "client_secret": "dpop-secret-6f1e2d"},
    # Confidential, secret (basic or post), DPoP optional: Bearer tokens without a proof.
    "bearer": {"client_id": "tokenproxy-bearer", "client_secret": "bearer-secret-9a8b7c"},
    # tls_client_auth: no secret, the certificate client.crt (subject DN below) authenticates it.
    "mtls": {"client_id": "tokenproxy-mtls", "subject_dn": "CN=tokenproxy-mtls-client,O=tokenproxy"},
}
GRANTS = ["password", "client_credentials", "refresh_token"]
ACCESS_TOKEN_DURATION = 3600
REFRESH_TOKEN_DURATION = 86400
DPOP_IAT_DURATION = 60        # a proof's iat may be at most this many seconds in the past
DPOP_IAT_GAP_DURATION = 10    # ... and at most this many seconds in the future
DPOP_NONCE_COUNTER = 100      # default of --dpop-nonce-counter (see README.md)


class FixtureError(Exception):
    pass


def log(message):
    print(f"glewlwyd fixture: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------- certificates

def openssl(*args, cwd):
    try:
        result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise FixtureError("openssl is not installed (apt-get install -y openssl)")
    if result.returncode != 0:
        raise FixtureError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def make_certificates(directory):
    """A CA, a server certificate for 127.0.0.1 and localhost, and two client certificates
    signed by the CA (client: the mTLS client's; other-client: a valid certificate of another
    subject, for the negative tests). EC P-256 keys, PKCS#8 PEM."""
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-subj", "/CN=tokenproxy glewlwyd test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=directory)

    def issue(name, subject, extensions):
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=directory)
        with open(os.path.join(directory, f"{name}.ext"), "w") as handle:
            handle.write(extensions)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "825", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=directory)
        os.remove(os.path.join(directory, f"{name}.csr"))
        os.remove(os.path.join(directory, f"{name}.ext"))
        with open(os.path.join(directory, f"{name}.pem"), "w") as bundle:  # key + certificate
            for part in (f"{name}.key", f"{name}.crt"):
                with open(os.path.join(directory, part)) as handle:
                    bundle.write(handle.read())

    issue("server", "/CN=localhost",
          "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
          "extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n")
    client_extensions = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                         "extendedKeyUsage=clientAuth\n")
    issue("client", "/O=tokenproxy/CN=tokenproxy-mtls-client", client_extensions)
    issue("other-client", "/O=tokenproxy/CN=tokenproxy-other-client", client_extensions)
    return {name: os.path.join(directory, name) for name in sorted(os.listdir(directory))}


def certificate_thumbprint(path):
    """x5t#S256 of a PEM certificate: base64url(SHA-256(DER)), unpadded."""
    with open(path) as handle:
        der = ssl.PEM_cert_to_DER_cert(handle.read())
    import hashlib
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


# ---------------------------------------------------------------------------- database, config

def read_schema():
    for path in SCHEMA_CANDIDATES:
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as handle:
                return path, handle.read()
    raise FixtureError("Glewlwyd's SQLite schema was not found (looked for " + ", ".join(SCHEMA_CANDIDATES)
                       + "); install it with: apt-get install -y --no-install-recommends glewlwyd")


def make_database(path):
    schema_path, schema = read_schema()
    if os.path.exists(path):
        os.remove(path)
    connection = sqlite3.connect(path)
    try:
        connection.executescript(schema)
        if connection.execute("SELECT COUNT(*) FROM g_user WHERE gu_username='admin'").fetchone()[0] == 0:
            connection.executescript(ADMIN_SQL)
        connection.commit()
    finally:
        connection.close()
    return schema_path


def write_config(path, port, base_url, database, log_file, certs):
    text = f"""# Written by tokenproxy's Tests/Interop/glewlwyd/start.py
port={port}
bind_address="127.0.0.1"
external_url="{base_url}"
login_url="login.html"
api_prefix="api"
static_files_path="{WEBAPP}"
allow_origin="*"
log_mode="file"
log_level="DEBUG"
log_file="{log_file}"
cookie_domain="127.0.0.1"
cookie_secure=1
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
plugin_api_run_enabled=""
max_post_size=16778240
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="{MODULE_ROOT}/user"
user_middleware_module_path="{MODULE_ROOT}/user_middleware"
client_module_path="{MODULE_ROOT}/client"
user_auth_scheme_module_path="{MODULE_ROOT}/scheme"
plugin_module_path="{MODULE_ROOT}/plugin"
use_secure_connection=true
secure_connection_key_file="{certs['server.key']}"
secure_connection_pem_file="{certs['server.crt']}"
# With a CA file the TLS server asks for (but does not require) a client certificate.
secure_connection_ca_file="{certs['ca.crt']}"
hash_algorithm="SHA512"
database =
{{
  type = "sqlite3"
  path = "{database}"
}};
response_allowed_compression=""
static_files_mime_types =
(
  {{
    extension = ".html"
    mime_type = "text/html"
    compress = 0
  }}
)
"""
    with open(path, "w") as handle:
        handle.write(text)


# ---------------------------------------------------------------------------- admin API

class Admin:
    def __init__(self, api_url, context, process):
        self.api_url = api_url
        self.context = context
        self.process = process
        self.cookie = None

    def call(self, method, path, body=None, expect=(200,)):
        if self.process.poll() is not None:
            raise FixtureError(f"glewlwyd exited with status {self.process.returncode}")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.api_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.cookie:
            request.add_header("Cookie", self.cookie)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=15) as response:
                status, headers, payload = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, headers, payload = error.code, error.headers, error.read()
        if status not in expect:
            raise FixtureError(f"admin API {method} {path} answered {status}: {payload.decode(errors='replace')[:2000]}")
        for header in headers.get_all("Set-Cookie") or []:
            if header.startswith("GLEWLWYD2_SESSION_ID="):
                self.cookie = header.split(";", 1)[0]
        return json.loads(payload) if payload.strip() else None


def wait_until_listening(port, process, deadline, log_file):
    while True:
        if process.poll() is not None:
            raise FixtureError(f"glewlwyd exited with status {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            time.sleep(0.2)  # a glewlwyd that failed to bind exits right away
            if process.poll() is None:
                return
            continue
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise FixtureError(f"glewlwyd did not listen on 127.0.0.1:{port} in time")
        time.sleep(0.1)


def provision(admin, base_url, nonce_counter):
    # Log in as the administrator (the core's password check; the cookie carries the session).
    deadline = time.monotonic() + 10
    while True:
        try:
            admin.call("POST", "/auth/", {"username": ADMIN_USERNAME, "password": ADMIN_PASSWORD})
            break
        except (FixtureError, OSError) as error:
            if time.monotonic() > deadline or admin.process.poll() is not None:
                raise FixtureError(f"admin login failed: {error}")
            time.sleep(0.2)

    # The database client module keeps only the properties its data-format lists: add the
    # subject DN of tls_client_auth and the DPoP-bound flag.
    module = admin.call("GET", "/mod/client/database")
    data_format = module["parameters"].setdefault("data-format", {})
    for name in ("tls_client_auth_subject_dn", DPOP_BOUND_PROPERTY, "token_endpoint_auth_method",
                 "authorization_type", "client_secret"):
        data_format.setdefault(name, {"multiple": name in ("token_endpoint_auth_method", "authorization_type"),
                                      "read": True, "write": True})
    admin.call("PUT", "/mod/client/database",
               {key: module[key] for key in ("module", "name", "display_name", "parameters", "order", "readonly", "enabled")
                if key in module})
    admin.call("PUT", "/mod/client/database/reset")  # the running instance keeps its old parameters otherwise

    admin.call("POST", "/scope/", {"name": CUSTOM_SCOPE, "display_name": "tokenproxy test scope",
                                   "description": "Custom scope of tokenproxy's interoperability tests",
                                   "password_required": False, "password_max_age": 0, "scheme": {}})

    admin.call("POST", "/mod/plugin/", {
        "module": "oidc",
        "name": PLUGIN_NAME,
        "display_name": "OpenID Connect (tokenproxy tests)",
        "enabled": True,
        "parameters": {
            "iss": f"{base_url}/api/{PLUGIN_NAME}",
            "jwt-type": "sha",
            "jwt-key-size": "256",
            "key": "tokenproxy-glewlwyd-signing-secret",
            "access-token-duration": ACCESS_TOKEN_DURATION,
            "refresh-token-duration": REFRESH_TOKEN_DURATION,
            "code-duration": 600,
            "refresh-token-rolling": True,
            "allow-non-oidc": True,
            "auth-type-code-enabled": True,
            "auth-type-token-enabled": False,
            "auth-type-id-token-enabled": True,
            "auth-type-none-enabled": False,
            "auth-type-password-enabled": True,
            "auth-type-client-enabled": True,
            "auth-type-refresh-enabled": True,
            "auth-type-device-enabled": False,
            "service-documentation": "https://github.com/babelouest/glewlwyd",
            "subject-type": "public",
            "scope": [],
            "claims": [],
            "name-claim": "mandatory",
            "email-claim": "mandatory",
            "address-claim": {"type": "no"},
            "introspection-revocation-allowed": True,
            "introspection-revocation-allow-target-client": True,
            "oauth-dpop-allowed": True,
            "oauth-dpop-iat-duration": DPOP_IAT_DURATION,
            "oauth-dpop-iat-gap-duration": DPOP_IAT_GAP_DURATION,
            "oauth-dpop-dpop_bound_access_tokens-property": DPOP_BOUND_PROPERTY,
            "oauth-dpop-nonce-mandatory": True,
            "oauth-dpop-nonce-counter": nonce_counter,
            "client-cert-source": "TLS",
            "client-cert-use-endpoint-aliases": False,
            "client-cert-self-signed-allowed": False,
        },
    })

    admin.call("POST", "/user/", {"username": USER["username"], "name": "Alice", "email": "alice@example.test",
                                  "password": USER["password"], "scope": ["openid", CUSTOM_SCOPE], "enabled": True})

    common = {"confidential": True, "enabled": True, "authorization_type": GRANTS,
              "scope": ["openid", CUSTOM_SCOPE], "redirect_uri": []}
    admin.call("POST", "/client/", {**common, "client_id": CLIENTS["dpop"]["client_id"], "name": "tokenproxy DPoP client",
                                    "password": CLIENTS["dpop"]["client_secret"],
                                    "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
                                    DPOP_BOUND_PROPERTY: "true"})
    admin.call("POST", "/client/", {**common, "client_id": CLIENTS["bearer"]["client_id"], "name": "tokenproxy Bearer client",
                                    "password": CLIENTS["bearer"]["client_secret"],
                                    "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"]})
    admin.call("POST", "/client/", {**common, "client_id": CLIENTS["mtls"]["client_id"], "name": "tokenproxy mTLS client",
                                    "token_endpoint_auth_method": ["tls_client_auth"],
                                    "tls_client_auth_subject_dn": CLIENTS["mtls"]["subject_dn"]})

    # Check what was stored, so a silently dropped property fails here and not in a test.
    stored = admin.call("GET", "/client/" + CLIENTS["mtls"]["client_id"])
    if stored.get("tls_client_auth_subject_dn") != CLIENTS["mtls"]["subject_dn"]:
        raise FixtureError(f"the mTLS client was stored without its subject DN: {stored}")
    stored = admin.call("GET", "/client/" + CLIENTS["dpop"]["client_id"])
    if str(stored.get(DPOP_BOUND_PROPERTY)) != "true":
        raise FixtureError(f"the DPoP client was stored without {DPOP_BOUND_PROPERTY}: {stored}")

    # The plugin answers once it is loaded.
    discovery = None
    deadline = time.monotonic() + 10
    while discovery is None:
        try:
            discovery = admin.call("GET", f"/{PLUGIN_NAME}/.well-known/openid-configuration")
        except FixtureError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return discovery


# ---------------------------------------------------------------------------- main

def set_parent_death_signal():
    """Runs in the child before exec: Glewlwyd gets SIGTERM if this script dies (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def log_tail(path, lines=40):
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, help="directory for the database, config, certificates, log")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for Glewlwyd to be ready")
    parser.add_argument("--dpop-nonce-counter", type=int, default=DPOP_NONCE_COUNTER,
                        help="successful DPoP proofs per client before Glewlwyd rotates its nonce (default %(default)s)")
    parser.add_argument("--ignore-stdin", action="store_true", help="do not stop when stdin closes")
    args = parser.parse_args()

    if not os.path.exists(GLEWLWYD):
        raise FixtureError("glewlwyd is not installed; install it with: apt-get install -y --no-install-recommends glewlwyd")
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    port = args.port or free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise FixtureError(f"port {port} on 127.0.0.1 is not free: {error}")
    base_url = f"https://127.0.0.1:{port}"
    certs = make_certificates(os.path.join(workdir, "certs"))
    database = os.path.join(workdir, "glewlwyd.db")
    schema = make_database(database)
    config_file = os.path.join(workdir, "glewlwyd.conf")
    log_file = os.path.join(workdir, "glewlwyd.log")
    if os.path.exists(log_file):
        os.remove(log_file)
    write_config(config_file, port, base_url, database, log_file, certs)

    deadline = time.monotonic() + args.timeout
    process = subprocess.Popen([GLEWLWYD, f"--config-file={config_file}"], cwd=workdir,
                               stdin=subprocess.DEVNULL, stdout=open(os.path.join(workdir, "glewlwyd.stdout"), "w"),
                               stderr=subprocess.STDOUT, preexec_fn=set_parent_death_signal)

    def on_signal(signum, frame):
        stop(process)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        wait_until_listening(port, process, deadline, log_file)
        context = ssl.create_default_context(cafile=certs["ca.crt"])
        discovery = provision(Admin(base_url + "/api", context, process), base_url, args.dpop_nonce_counter)
    except BaseException as error:
        stop(process)
        if isinstance(error, (FixtureError, OSError, KeyError, ValueError)):
            raise FixtureError(f"{error}\n--- tail of {log_file} ---\n{log_tail(log_file)}") from None
        raise

    plugin_url = f"{base_url}/api/{PLUGIN_NAME}"
    info = {
        "base_url": base_url,
        "port": port,
        "pid": process.pid,
        "plugin_url": plugin_url,
        "issuer": discovery.get("issuer"),
        "discovery_endpoint": f"{plugin_url}/.well-known/openid-configuration",
        "token_endpoint": discovery.get("token_endpoint", f"{plugin_url}/token"),
        "userinfo_endpoint": discovery.get("userinfo_endpoint", f"{plugin_url}/userinfo"),
        "introspection_endpoint": discovery.get("introspection_endpoint", f"{plugin_url}/introspect"),
        "revocation_endpoint": discovery.get("revocation_endpoint", f"{plugin_url}/revoke"),
        "jwks_uri": discovery.get("jwks_uri"),
        "scope": f"openid {CUSTOM_SCOPE}",
        "custom_scope": CUSTOM_SCOPE,
        "user": dict(USER),
        "clients": {
            "dpop": {**CLIENTS["dpop"], "auth_methods": ["client_secret_basic", "client_secret_post"], "dpop_required": True},
            "bearer": {**CLIENTS["bearer"], "auth_methods": ["client_secret_basic", "client_secret_post"], "dpop_required": False},
            "mtls": {**CLIENTS["mtls"], "auth_methods": ["tls_client_auth"],
                     "cert_file": certs["client.crt"], "key_file": certs["client.key"], "pem_file": certs["client.pem"],
                     "x5t#S256": certificate_thumbprint(certs["client.crt"])},
        },
        "grant_types": GRANTS,
        "dpop": {"nonce_mandatory": True, "iat_max_age_seconds": DPOP_IAT_DURATION,
                 "iat_max_future_seconds": DPOP_IAT_GAP_DURATION, "nonce_counter": args.dpop_nonce_counter},
        "ca_file": certs["ca.crt"],
        "server_cert_file": certs["server.crt"],
        "server_key_file": certs["server.key"],
        "other_client_cert_file": certs["other-client.crt"],
        "other_client_key_file": certs["other-client.key"],
        "other_client_pem_file": certs["other-client.pem"],
        "admin": {"username": ADMIN_USERNAME, "password": ADMIN_PASSWORD},
        "workdir": workdir,
        "config_file": config_file,
        "database": database,
        "schema": schema,
        "log_file": log_file,
    }
    print(json.dumps(info), flush=True)

    stdin_closed = threading.Event()
    if not args.ignore_stdin:
        def watch_stdin():
            try:
                while sys.stdin.buffer.read1(4096) if hasattr(sys.stdin.buffer, "read1") else sys.stdin.buffer.read(1):
                    pass
            except (OSError, ValueError):
                pass
            stdin_closed.set()
        threading.Thread(target=watch_stdin, daemon=True).start()
    while not stdin_closed.is_set():
        if process.poll() is not None:
            log(f"glewlwyd exited with status {process.returncode}\n--- tail of {log_file} ---\n{log_tail(log_file)}")
            sys.exit(1)
        stdin_closed.wait(0.5)
    stop(process)


if __name__ == "__main__":
    try:
        main()
    except FixtureError as error:
        log(str(error))
        sys.exit(1)
