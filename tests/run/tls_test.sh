#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TLS and basic auth test: the real drivewatch binary with a web config
# (Prometheus exporter-toolkit format), a CA, server and client certificates
# made by the real openssl at test time, and the real curl as the client.
#   usage: tls_test.sh DRIVEWATCH_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$src/tests/run/lib.sh"

log_to_show=""
fail() {
  echo "FAIL: $*" >&2
  if [[ -n $log_to_show && -f $log_to_show ]]; then
    echo "--- daemon log ---" >&2
    cat "$log_to_show" >&2
  fi
  exit 1
}
pass() { echo "ok: $*"; }

# alice / wonderland and bob / builder, bcrypt cost 4 so the test is quick
# (made with python3's crypt module on libxcrypt; htpasswd -nbBC 4 alice
# wonderland makes the same kind). alice's is given as $2y$ (htpasswd's
# prefix), bob's as $2b$.
alice_hash='$2y$04$7XgErvA/q6MDvzDEkYtj7.sL8dpSX8ZqA1ZaZ3VVxlk88.QfWOB7a'
bob_hash='$2b$04$jNFKUrT/U3gAFH11fTex6eTho/Q5zvpqnqp.wsg96iaL.oZBlCelC'

# --- certificates -----------------------------------------------------------
cd "$work"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 2 \
  -subj /CN=drivewatch-test-ca 2>/dev/null
openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n' >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out server.crt -days 2 -extfile server.ext 2>/dev/null
openssl req "${ec[@]}" -keyout client.key -out client.csr -subj /CN=prometheus 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >client.ext
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out client.crt -days 2 -extfile client.ext 2>/dev/null
# A client certificate from a CA the server does not trust.
openssl req -x509 "${ec[@]}" -keyout rogue.key -out rogue.crt -days 2 -subj /CN=rogue 2>/dev/null
# A key that belongs to no certificate here.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out other.key 2>/dev/null
pass "test CA, server and client certificates made with $(openssl version | cut -d' ' -f1-2)"

cat >"$work/dw.toml" <<TOML
[state]
directory = "$work/state"
[discovery]
interval = "1s"
TOML

# The daemon with this test's config (tests/run/lib.sh's start_daemon; it
# sets pid and url); its log is the one fail shows.
serve() {
  log_to_show=$1
  start_daemon "$1" --config.file="$work/dw.toml" "${@:2}"
}

code_of() { curl -s -o /dev/null -w '%{http_code}' "$@" || true; }

# --- TLS + basic auth -------------------------------------------------------
# Relative paths: relative to the web config file's directory, so the file
# lives in a subdirectory and names ../server.crt.
mkdir -p "$work/etc"
cat >"$work/etc/web.yml" <<YAML
# drivewatch web config (exporter-toolkit format)
tls_server_config:
  cert_file: ../server.crt
  key_file: "../server.key"
  min_version: TLS12
basic_auth_users:
  alice: $alice_hash
http_server_config:
  headers:
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
YAML
"$bin" check-config --web.config.file="$work/etc/web.yml" >"$work/out" \
  || fail "check-config rejected a good web config: $(cat "$work/out")"
grep -qx "$work/etc/web.yml: OK" "$work/out" || fail "check-config did not say OK"
pass "check-config --web.config.file accepts a good web config"

serve "$work/tls.log" --web.listen-address=127.0.0.1:0 --web.config.file="$work/etc/web.yml"
[[ $url == https://* ]] || fail "expected an https URL, got $url"
https_url=${url/localhost/127.0.0.1}
tls_pid=$pid

curl -fsS --cacert ca.crt -u alice:wonderland "$https_url" >"$work/scrape.prom" \
  || fail "curl with the right password"
grep -q '^drivewatch_build_info{' "$work/scrape.prom" || fail "no build_info over TLS"
lint=$(promtool check metrics <"$work/scrape.prom" 2>&1) || fail "promtool: $lint"
pass "https + right password: /metrics served and promtool-clean"

code=$(code_of --cacert ca.crt "$https_url")
[[ $code == 401 ]] || fail "no credentials gave $code, expected 401"
curl -s -D "$work/h401" -o /dev/null --cacert ca.crt "$https_url" || true
grep -qi '^WWW-Authenticate: Basic realm="drivewatch"' "$work/h401" || fail "401 without WWW-Authenticate: $(cat "$work/h401")"
code=$(code_of --cacert ca.crt -u alice:wrong "$https_url")
[[ $code == 401 ]] || fail "a wrong password gave $code, expected 401"
code=$(code_of --cacert ca.crt -u mallory:wonderland "$https_url")
[[ $code == 401 ]] || fail "an unknown user gave $code, expected 401"
code=$(code_of --cacert ca.crt -u alice:wonderland "${https_url%/metrics}/-/healthy")
[[ $code == 200 ]] || fail "/-/healthy with auth gave $code"
pass "basic auth: missing, wrong password and unknown user get 401 with WWW-Authenticate; right one 200"

curl -s -D "$work/h200" -o /dev/null --cacert ca.crt -u alice:wonderland "$https_url"
grep -qi '^X-Frame-Options: deny' "$work/h200" || fail "X-Frame-Options header missing"
grep -qi '^X-Content-Type-Options: nosniff' "$work/h200" || fail "X-Content-Type-Options header missing"
pass "http_server_config.headers are sent"

code=$(code_of --cacert ca.crt -u alice:wonderland -X POST "$https_url")
[[ $code == 405 ]] || fail "POST gave $code, expected 405"
code=$(code_of --cacert ca.crt -u alice:wonderland -X DELETE "$https_url")
[[ $code == 405 ]] || fail "DELETE gave $code, expected 405"
code=$(code_of --cacert ca.crt -u alice:wonderland -I "$https_url")
[[ $code == 200 ]] || fail "HEAD gave $code, expected 200"
pass "only GET and HEAD: POST and DELETE get 405"

# Plain HTTP to the TLS port gets 400 in plain text, as Go's servers answer.
plain=${https_url/https:/http:}
curl -sS --max-time 5 -D "$work/hplain" -o "$work/plain.body" "$plain" >/dev/null 2>"$work/plain.err" || true
head -1 "$work/hplain" | grep -q '^HTTP/1.0 400' || fail "plain HTTP to the TLS port: $(head -1 "$work/hplain") $(cat "$work/plain.err")"
grep -q 'HTTP request to an HTTPS server' "$work/plain.body" || fail "400 without an explanation: $(cat "$work/plain.body")"
pass "plain HTTP to the TLS port gets 400: $(cat "$work/plain.body")"

# TLS 1.1 and older are refused. curl with --tls-max 1.1 must fail...
if curl -fsS --cacert ca.crt -u alice:wonderland --tlsv1.0 --tls-max 1.1 "$https_url" >/dev/null 2>"$work/curl11"; then
  fail "curl --tls-max 1.1 succeeded"
fi
# ...and, since Debian's OpenSSL also refuses TLS 1.1 on the client side,
# make sure it is the server refusing: s_client offers TLS 1.1 at security
# level 0 and fails, while the same s_client gets TLS 1.2 through.
hostport=${https_url#https://}
hostport=${hostport%%/*}
if OPENSSL_CONF=/dev/null openssl s_client -connect "$hostport" -tls1_1 \
     -cipher 'DEFAULT:@SECLEVEL=0' </dev/null >"$work/s11" 2>&1; then
  fail "openssl s_client -tls1_1 completed a handshake: $(grep -i protocol "$work/s11")"
fi
OPENSSL_CONF=/dev/null openssl s_client -connect "$hostport" -tls1_2 \
  -cipher 'DEFAULT:@SECLEVEL=0' </dev/null >"$work/s12" 2>&1 \
  || fail "openssl s_client -tls1_2 failed: $(tail -5 "$work/s12")"
pass "TLS 1.1 refused by the server (curl --tls-max 1.1: $(grep -o 'curl: ([0-9]*)' "$work/curl11" | head -1)); TLS 1.2 accepted"

# TLS 1.2 suites: ECDHE with AEAD only, as docs/security.md says.
for suite in ECDHE-ECDSA-AES128-SHA ECDHE-ECDSA-AES256-SHA384 ECDHE-ECDSA-AES128-SHA256; do
  if OPENSSL_CONF=/dev/null openssl s_client -connect "$hostport" -tls1_2 \
       -cipher "$suite:@SECLEVEL=0" </dev/null >"$work/scbc" 2>&1; then
    fail "TLS 1.2 accepted the CBC suite $suite"
  fi
done
for suite in ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-ECDSA-CHACHA20-POLY1305; do
  OPENSSL_CONF=/dev/null openssl s_client -connect "$hostport" -tls1_2 -cipher "$suite" \
    </dev/null >"$work/saead" 2>&1 || fail "TLS 1.2 refused $suite: $(tail -3 "$work/saead")"
done
pass "TLS 1.2: CBC suites refused, ECDHE with AES-GCM and ChaCha20-Poly1305 accepted"

# A private key every user can read is accepted with a located warning.
cp server.key open.key
chmod 0644 open.key
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: open.key\n' >"$work/open.yml"
"$bin" check-config --web.config.file="$work/open.yml" >"$work/out" 2>"$work/err" \
  || fail "check-config refused a world-readable key: $(cat "$work/err")"
grep -q "^warning: $work/open.yml:3:13: tls_server_config.key_file: \"$work/open.key\" is readable by every user (mode 0644" "$work/err" \
  || fail "no warning for a key file with mode 0644: $(cat "$work/err")"
warning=$(head -1 "$work/err")
chmod 0600 open.key
"$bin" check-config --web.config.file="$work/open.yml" >"$work/out" 2>"$work/err"
[[ ! -s $work/err ]] || fail "a warning for a key file with mode 0600: $(cat "$work/err")"
pass "a key file readable by others is accepted with a warning (none at 0600): ${warning#"warning: $work/"}"

# --- SIGHUP -----------------------------------------------------------------
scrape_alice() { curl -fsS --cacert ca.crt -u alice:wonderland "$https_url"; }
cp "$work/etc/web.yml" "$work/etc/web.yml.good"
sed -i 's/min_version: TLS12/min_version: TLS11/' "$work/etc/web.yml"
kill -HUP "$tls_pid"
for _ in $(seq 50); do
  grep -q '^drivewatch_config_last_reload_successful 0$' <<<"$(scrape_alice)" && break
  sleep 0.1
done
grep -q '^drivewatch_config_last_reload_successful 0$' <<<"$(scrape_alice)" \
  || fail "a bad web config on SIGHUP was not reported"
grep -q "web.yml:5:16: tls_server_config.min_version: \"TLS11\" is too weak (expected TLS12 or TLS13)" "$work/tls.log" \
  || fail "the located error was not logged: $(grep -i error "$work/tls.log")"
grep -q "keeping the running config" "$work/tls.log" || fail "no 'keeping the running config'"
kill -0 "$tls_pid" || fail "the daemon died on a bad web config"
pass "SIGHUP with a bad web config: old config keeps serving, located error logged: $(grep -o 'web.yml:5:16.*' "$work/tls.log" | head -1)"

cp "$work/etc/web.yml.good" "$work/etc/web.yml"
sed -i "s|^  alice: .*|&\n  bob: $bob_hash|" "$work/etc/web.yml"
kill -HUP "$tls_pid"
for _ in $(seq 50); do
  grep -q '^drivewatch_config_last_reload_successful 1$' <<<"$(curl -fsS --cacert ca.crt -u bob:builder "$https_url" 2>/dev/null)" && break
  sleep 0.1
done
grep -q '^drivewatch_config_last_reload_successful 1$' <<<"$(curl -fsS --cacert ca.crt -u bob:builder "$https_url")" \
  || fail "a good web config on SIGHUP did not take (bob cannot scrape)"
scrape_alice >/dev/null || fail "alice lost access after the reload"
pass "SIGHUP with a good web config: the new user works, the old one still does"
stop_daemon

# --- client certificates ----------------------------------------------------
cat >"$work/mtls.yml" <<YAML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
YAML
serve "$work/mtls.log" --web.listen-address=127.0.0.1:0 --web.config.file="$work/mtls.yml"
murl=${url/localhost/127.0.0.1}
grep -q '^drivewatch_build_info{' <<<"$(curl -fsS --cacert ca.crt --cert client.crt --key client.key "$murl")" \
  || fail "a client certificate from the CA was refused"
if curl -fsS --cacert ca.crt "$murl" >/dev/null 2>&1; then fail "no client certificate was accepted"; fi
if curl -fsS --cacert ca.crt --cert rogue.crt --key rogue.key "$murl" >/dev/null 2>&1; then
  fail "a client certificate from another CA was accepted"
fi
if curl -fsS --cacert ca.crt --cert client.crt --key client.key --tls-max 1.2 "$murl" >/dev/null 2>&1; then
  fail "TLS 1.2 accepted with min_version TLS13"
fi
pass "RequireAndVerifyClientCert: CA-signed client cert in; none, or another CA's, refused; TLS13 minimum holds"
stop_daemon

# --- IPv6 over TLS ----------------------------------------------------------
if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
  serve "$work/v6.log" '--web.listen-address=[::1]:0' --web.config.file="$work/etc/web.yml"
  [[ $url == "https://[::1]:"* ]] || fail "expected https://[::1]:PORT, got $url"
  grep -q '^drivewatch_build_info{' <<<"$(curl -fsS -g --cacert ca.crt -u alice:wonderland "$url")" \
    || fail "https over IPv6 to [::1]"
  pass "TLS over IPv6: $url"
  stop_daemon
  # Dual stack (":PORT"): the same TLS listener answers on 127.0.0.1 and ::1.
  serve "$work/dual.log" --web.listen-address=:0 --web.config.file="$work/etc/web.yml"
  port=${url##*:}
  port=${port%%/*}
  curl -fsS --cacert ca.crt -u alice:wonderland "https://127.0.0.1:$port/metrics" >/dev/null \
    || fail "dual stack: IPv4"
  curl -fsS -g --cacert ca.crt -u alice:wonderland "https://[::1]:$port/metrics" >/dev/null \
    || fail "dual stack: IPv6"
  pass "TLS dual stack on :$port answers on 127.0.0.1 and [::1]"
  stop_daemon
else
  echo "skip: no IPv6 loopback on this machine"
fi

# --- bad web configs at start: exit 2 with a located error -------------------
expect_start_error() {
  local name=$1 pattern=$2
  set +e
  timeout 10 "$bin" --config.file="$work/dw.toml" --web.listen-address=127.0.0.1:0 \
    --web.config.file="$work/$name" >/dev/null 2>"$work/err"
  local status=$?
  set -e
  [[ $status -eq 2 ]] || fail "$name: exited $status, expected 2 ($(cat "$work/err"))"
  grep -q -- "$pattern" "$work/err" || fail "$name: expected /$pattern/, got: $(cat "$work/err")"
  pass "bad web config at start exits 2: $(head -1 "$work/err")"
}
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS10\n' >"$work/weak.yml"
expect_start_error weak.yml "weak.yml:4:16: tls_server_config.min_version: \"TLS10\" is too weak (expected TLS12 or TLS13)"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_typ: NoClientCert\n' >"$work/typo.yml"
expect_start_error typo.yml "typo.yml:4:3: tls_server_config.client_auth_typ: unknown key (did you mean \"client_auth_type\"?)"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n' >"$work/mismatch.yml"
expect_start_error mismatch.yml "mismatch.yml:3:13: tls_server_config.key_file: .* does not match the certificate"
printf 'tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n' >"$work/missing.yml"
expect_start_error missing.yml "missing.yml:2:14: tls_server_config.cert_file: cannot read .*No such file or directory"
printf 'basic_auth_users:\n  alice: $2y$04$tooshort\n' >"$work/hash.yml"
expect_start_error hash.yml "hash.yml:2:10: basic_auth_users.alice: the password hash is not a bcrypt hash"
printf 'http_server_config:\n  headers:\n    Authorization: secret\n' >"$work/header.yml"
expect_start_error header.yml "header.yml:3:5: http_server_config.headers.Authorization: HTTP header \"Authorization\" cannot be configured"
printf 'basic_auth_users: {alice: x}\n' >"$work/flow.yml"
expect_start_error flow.yml "flow.yml:1:19: basic_auth_users: flow collections"
"$bin" check-config --web.config.file="$work/weak.yml" >/dev/null 2>&1 && fail "check-config accepted weak.yml"

# Every fixture under tests/fixtures/webconfig named bad_* is rejected by
# check-config with a located message; good_* are accepted (syntax only:
# they name no real certificates, so they stay without TLS).
for f in "$src"/tests/fixtures/webconfig/bad_*.yml; do
  [[ -e $f ]] || continue
  set +e
  "$bin" check-config --web.config.file="$f" >/dev/null 2>"$work/err"
  status=$?
  set -e
  [[ $status -eq 2 ]] || fail "check-config accepted $f"
  grep -q "^$f:[0-9]*:[0-9]*: " "$work/err" || fail "$f: error not located: $(cat "$work/err")"
done
for f in "$src"/tests/fixtures/webconfig/good_*.yml; do
  [[ -e $f ]] || continue
  "$bin" check-config --web.config.file="$f" >/dev/null 2>"$work/err" || fail "$f rejected: $(cat "$work/err")"
done
pass "fixtures: bad_* rejected with located errors, good_* accepted"
echo "tls test: all checks passed"
