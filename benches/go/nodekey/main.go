// Command nodekey times, with Go's standard library only, the four node-side operations the
// tls_bootstrap criterion bench times for our crates, on the same fixtures: generating a P-256
// key, building and signing the node's certificate request, parsing and checking a request,
// and accepting an issued certificate (as accept_certificate does).
//
// Usage (the module is this directory alone, no dependencies):
//
//	cd benches/go/nodekey && go run .
//
// Each round runs every operation for -each (default 200ms) in turn; the figure printed is the
// median over -rounds (default 15) of each round's time per operation.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"
)

// The instant the criterion bench accepts the certificate at (2030-01-01T00:00:00Z).
var now = time.Unix(1_893_456_000, 0)

func main() {
	fixtures := flag.String("fixtures", "../../../fuzz/checks/fixtures/tls-bootstrap", "directory of ca.pem, node.key, node.pem")
	rounds := flag.Int("rounds", 15, "alternating rounds")
	each := flag.Duration("each", 200*time.Millisecond, "time per operation per round")
	flag.Parse()

	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(*fixtures, name))
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	caPEM, keyPEM, certPEM := read("ca.pem"), read("node.key"), read("node.pem")
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		log.Fatal("node.key: no PEM block")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		log.Fatal(err)
	}

	forNode := func(name string) []byte {
		template := &x509.CertificateRequest{
			Subject: pkix.Name{
				CommonName:   "system:node:" + name,
				Organization: []string{"system:nodes"},
			},
			SignatureAlgorithm: x509.ECDSAWithSHA256,
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
		if err != nil {
			log.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	requestPEM := forNode("worker-1")

	ops := []struct {
		name string
		run  func() error
	}{
		{"generate_key (ecdsa.GenerateKey P-256)", func() error {
			_, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			return err
		}},
		{"for_node (x509.CreateCertificateRequest + PEM)", func() error {
			forNode("worker-1")
			return nil
		}},
		{"from_pem (pem.Decode + x509.ParseCertificateRequest + CheckSignature)", func() error {
			block, _ := pem.Decode(requestPEM)
			if block == nil {
				return errors.New("no PEM block")
			}
			csr, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				return err
			}
			return csr.CheckSignature()
		}},
		{"accept_certificate (parse chain + CA bundle, Verify, key and subject match)", func() error {
			return accept(certPEM, caPEM, key, "fuzz")
		}},
	}
	for _, op := range ops {
		if err := op.run(); err != nil {
			log.Fatalf("%s: %v", op.name, err)
		}
	}

	samples := make([][]float64, len(ops))
	for r := 0; r < *rounds; r++ {
		for i, op := range ops {
			runtime.GC()
			n := 0
			start := time.Now()
			for time.Since(start) < *each {
				for j := 0; j < 16; j++ {
					if err := op.run(); err != nil {
						log.Fatal(err)
					}
				}
				n += 16
			}
			samples[i] = append(samples[i], float64(time.Since(start).Nanoseconds())/float64(n))
		}
	}
	fmt.Printf("%s %s/%s, %d rounds of %s per operation, median:\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, *rounds, *each)
	for i, op := range ops {
		s := samples[i]
		sort.Float64s(s)
		fmt.Printf("%-80s %8.1f µs  (min %.1f, max %.1f)\n", op.name, s[len(s)/2]/1e3, s[0]/1e3, s[len(s)-1]/1e3)
	}
}

// accept parses the issued chain and the CA bundle, checks that the leaf holds the node's
// public key, names the node (CN system:node:<name>, O system:nodes), may sign and is for client
// authentication, and verifies it up to the CA bundle at now.
func accept(certPEM, caPEM []byte, key *ecdsa.PrivateKey, node string) error {
	var chain []*x509.Certificate
	rest := certPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		chain = append(chain, cert)
	}
	if len(chain) == 0 {
		return errors.New("no certificate")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate")
	}
	leaf := chain[0]
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(key.Public()) {
		return errors.New("wrong key")
	}
	if leaf.Subject.CommonName != "system:node:"+node || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "system:nodes" {
		return errors.New("wrong subject")
	}
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return errors.New("no digitalSignature key usage")
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return err
}
