# A private CA and a server certificate it signs, made with openssl, for the scripts that run the
# tests' servers with TLS (scripts/elasticsearch.sh, keycloak.sh), which source this file. Needs
# their log() and die().

# server_pki DIR CA_NAME CN SANS: makes DIR/ca.crt, DIR/tls.crt and DIR/tls.key (P-256 keys, as the
# tests' own PKI, testPki in harness/trace/traces.ts) for subjectAltName SANS
# ("DNS:…,IP:…"), unless DIR holds them already for those SANS and the certificate is valid for
# another day; then it reuses them.
server_pki() {
  local pki=$1 ca_name=$2 cn=$3 sans=$4
  if [[ -f "$pki/ca.crt" && -f "$pki/tls.key" && $(cat "$pki/sans" 2>/dev/null) == "$sans" ]] &&
    openssl x509 -checkend 86400 -noout -in "$pki/tls.crt" >/dev/null 2>&1; then
    return
  fi
  log "making a CA and a server certificate for $sans in $pki"
  rm -rf "$pki"
  mkdir -p "$pki"
  chmod 700 "$pki"
  local key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  (
    cd "$pki"
    openssl req -x509 "${key[@]}" -keyout ca.key -out ca.crt -days 3650 -subj "/CN=$ca_name"
    openssl req "${key[@]}" -keyout tls.key -out tls.csr -subj "/CN=$cn"
    printf '%s\n' "subjectAltName=$sans" "extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature" >tls.ext
    openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 825 -extfile tls.ext
    rm -f tls.csr tls.ext ca.srl
    echo "$sans" >sans
  ) >"$pki/openssl.log" 2>&1 || { cat "$pki/openssl.log" >&2; die "openssl failed to make the certificates (output above)"; }
}
