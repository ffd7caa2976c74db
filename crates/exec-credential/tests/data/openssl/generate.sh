#!/bin/sh
# Regenerates the OpenSSL-made client keys and certificates in this directory (OpenSSL 3).
# Each key is checked against its certificate by tests/keypair.rs, under its own PEM label and
# relabelled, as Go's tls.X509KeyPair parses a key by content under any "... PRIVATE KEY" label.
set -eu
cd "$(dirname "$0")"
days=36500
# ECDSA P-256, SEC1 ("EC PRIVATE KEY"), as `openssl ecparam -genkey -noout` writes it.
openssl ecparam -genkey -name prime256v1 -noout -out ec.sec1.key
openssl req -new -x509 -key ec.sec1.key -subj /CN=openssl-ec -days "$days" -out ec.crt
# The same key as PKCS#8 ("PRIVATE KEY").
openssl pkcs8 -topk8 -nocrypt -in ec.sec1.key -out ec.pkcs8.key
# The SEC1 DER under the "PRIVATE KEY" label (what Go's own test helpers write).
sed 's/EC PRIVATE KEY/PRIVATE KEY/' ec.sec1.key > ec.sec1-labelled-pkcs8.key
# `openssl ecparam -genkey` without -noout: an "EC PARAMETERS" block before the key.
openssl ecparam -genkey -name prime256v1 -out ec-params.key
openssl req -new -x509 -key ec-params.key -subj /CN=openssl-ec-params -days "$days" -out ec-params.crt
# RSA, PKCS#1 ("RSA PRIVATE KEY").
openssl genrsa -traditional -out rsa.pkcs1.key 2048
openssl req -new -x509 -key rsa.pkcs1.key -subj /CN=openssl-rsa -days "$days" -out rsa.crt
