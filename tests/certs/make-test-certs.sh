#!/bin/sh
# Makes a throwaway certificate authority and, signed by it, a server and a
# client certificate for TLS tests against a private redis-server on loopback.
#
#   sh tests/certs/make-test-certs.sh DIR
#
# writes DIR/ca.crt, DIR/server.{crt,key} (valid for 127.0.0.1, ::1 and
# localhost) and DIR/client.{crt,key} (for redis-server's
# --tls-auth-clients yes). Keys are EC P-256: generated in milliseconds, and
# accepted by both OpenSSL (redis-server) and rustls (redmodel's client).
# Everything is valid for 2 days: nothing here is meant to outlive a test run.
# Never use these files for anything but tests.
set -eu

dir=${1:?usage: make-test-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

ec_key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

# rustls (webpki) insists on X.509 v3 with the right extensions: a CA with
# basicConstraints CA:TRUE and keyCertSign, leaves with CA:FALSE, an extended
# key usage, and (for the server) the addresses it is reached at as SANs.
ec_key ca.key
openssl req -x509 -new -key ca.key -days 2 -subj "/CN=redmodel test CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.crt 2>/dev/null

leaf() {
    name=$1
    usage=$2
    san=$3
    ec_key "$name.key"
    openssl req -new -key "$name.key" -subj "/CN=redmodel test $name" -out "$name.csr" 2>/dev/null
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$usage"
        if [ -n "$san" ]; then echo "subjectAltName=$san"; fi
    } > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
        -days 2 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
}

leaf server serverAuth "IP:127.0.0.1,IP:::1,DNS:localhost"
leaf client clientAuth ""
rm -f ca.srl
