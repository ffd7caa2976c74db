// Command servingcsr times, with Go's standard library only, what the tls_bootstrap criterion
// bench's serving groups time for our crates, on the same keys: building a kubelet-serving
// certificate request (x509.CreateCertificateRequest with the node's subject, two DNS names and
// two IP addresses, ECDSA P-256 and RSA 2048), and a serving approver's decision on it (the
// checks kubelet-serving approvers make, written here from their documented behaviour: the
// requester is the subject's common name, the organization is system:nodes, no email or URI
// names, the usages are the serving ones, every DNS name matches the provider regex, every IP
// address lies in an allowed prefix and among the Node's addresses), from the PEM (parsed,
// signature checked) and on a request already parsed.
//
// Usage (the module is this directory alone, no dependencies):
//
//	cd benches/go/servingcsr && go run .
//
// Each round runs every operation for -each (default 200ms) in turn; the figure printed is the
// median over -rounds (default 15) of each round's time per operation.
package main

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

var (
	hostnames = []string{"worker-1", "worker-1.cluster.example"}
	ips       = []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("fd00::5")}
)

// policy is the approver's configuration, as the Rust bench's ServingPolicy.
type policy struct {
	providerRegex *regexp.Regexp
	prefixes      []netip.Prefix
}

// request is what the approver reads of a CertificateSigningRequest object.
type request struct {
	username string
	usages   []string
	pem      []byte
}

func main() {
	fixtures := flag.String("fixtures", "../../../fuzz/checks/fixtures/tls-bootstrap", "directory of node.key")
	rsaKey := flag.String("rsa-key", "../../data/rsa2048_node.key", "the RSA 2048 key (PKCS#8 PEM)")
	rounds := flag.Int("rounds", 15, "alternating rounds")
	each := flag.Duration("each", 200*time.Millisecond, "time per operation per round")
	flag.Parse()

	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			log.Fatal(err)
		}
		block, _ := pem.Decode(b)
		if block == nil {
			log.Fatalf("%s: no PEM block", path)
		}
		return block.Bytes
	}
	p256, err := x509.ParseECPrivateKey(read(filepath.Join(*fixtures, "node.key")))
	if err != nil {
		log.Fatal(err)
	}
	rsaAny, err := x509.ParsePKCS8PrivateKey(read(*rsaKey))
	if err != nil {
		log.Fatal(err)
	}
	rsa2048, ok := rsaAny.(crypto.Signer)
	if !ok {
		log.Fatal("the RSA key is not a signer")
	}

	servingRequest := func(key crypto.Signer) []byte {
		template := &x509.CertificateRequest{
			Subject: pkix.Name{
				CommonName:   "system:node:worker-1",
				Organization: []string{"system:nodes"},
			},
			DNSNames:    hostnames,
			IPAddresses: ips,
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
		if err != nil {
			log.Fatal(err)
		}
		return der
	}
	pemOf := func(der []byte) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}

	pol := policy{
		providerRegex: regexp.MustCompile(`^worker-[0-9]+(\.cluster\.example)?$`),
		prefixes:      []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")},
	}
	nodeAddresses := [][2]string{{"Hostname", "worker-1"}, {"InternalIP", "10.0.0.5"}, {"InternalIP", "fd00::5"}}
	req := request{
		username: "system:node:worker-1",
		usages:   []string{"digital signature", "server auth"},
		pem:      pemOf(servingRequest(p256)),
	}
	parsed, err := parse(req.pem)
	if err != nil {
		log.Fatal(err)
	}

	ops := []struct {
		name string
		run  func() error
	}{
		{"serving request, P-256 (x509.CreateCertificateRequest)", func() error {
			servingRequest(p256)
			return nil
		}},
		{"serving request, P-256, + PEM", func() error {
			pemOf(servingRequest(p256))
			return nil
		}},
		{"serving request, RSA 2048 (x509.CreateCertificateRequest)", func() error {
			servingRequest(rsa2048)
			return nil
		}},
		{"serving request, RSA 2048, + PEM", func() error {
			pemOf(servingRequest(rsa2048))
			return nil
		}},
		{"approver: decision from the PEM (parse, CheckSignature, checks)", func() error {
			csr, err := parse(req.pem)
			if err != nil {
				return err
			}
			return decide(req, csr, nodeAddresses, pol)
		}},
		{"approver: decision on a parsed request (checks only)", func() error {
			return decide(req, parsed, nodeAddresses, pol)
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
		fmt.Printf("%-68s %9.2f µs  (min %.2f, max %.2f)\n", op.name, s[len(s)/2]/1e3, s[0]/1e3, s[len(s)-1]/1e3)
	}
}

// parse decodes the PEM block, parses the request and checks its self-signature.
func parse(p []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("no CERTIFICATE REQUEST PEM block")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	return csr, csr.CheckSignature()
}

// decide makes the approver's checks; nil approves.
func decide(req request, csr *x509.CertificateRequest, addresses [][2]string, pol policy) error {
	if !strings.HasPrefix(req.username, "system:node:") {
		return errors.New("not a node")
	}
	if csr.Subject.CommonName != req.username {
		return errors.New("requester is not the common name")
	}
	if strings.TrimPrefix(csr.Subject.CommonName, "system:node:") == "" {
		return errors.New("empty node name")
	}
	if len(csr.Subject.Organization) != 1 || csr.Subject.Organization[0] != "system:nodes" {
		return errors.New("organization is not system:nodes")
	}
	if len(csr.EmailAddresses) > 0 || len(csr.URIs) > 0 {
		return errors.New("email or URI names")
	}
	if len(csr.DNSNames)+len(csr.IPAddresses) == 0 {
		return errors.New("no DNS name or IP address")
	}
	allowed := map[string]bool{"digital signature": true, "server auth": true, "key encipherment": true}
	for _, u := range req.usages {
		if !allowed[u] {
			return fmt.Errorf("usage %q", u)
		}
	}
	nodeIPs := make(map[netip.Addr]bool, len(addresses))
	for _, a := range addresses {
		if ip, err := netip.ParseAddr(a[1]); err == nil {
			nodeIPs[ip] = true
		}
	}
	seen := make(map[string]bool, len(csr.DNSNames))
	for _, name := range csr.DNSNames {
		if name == "" || seen[name] {
			return fmt.Errorf("DNS name %q empty or repeated", name)
		}
		seen[name] = true
		if !pol.providerRegex.MatchString(name) {
			return fmt.Errorf("DNS name %q does not match the provider regex", name)
		}
	}
	seenIP := make(map[netip.Addr]bool, len(csr.IPAddresses))
	for _, raw := range csr.IPAddresses {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok {
			return errors.New("bad IP address")
		}
		ip = ip.Unmap()
		if seenIP[ip] {
			return fmt.Errorf("IP address %s repeated", ip)
		}
		seenIP[ip] = true
		in := false
		for _, p := range pol.prefixes {
			if p.Contains(ip) {
				in = true
				break
			}
		}
		if !in {
			return fmt.Errorf("IP address %s outside the allowed prefixes", ip)
		}
		if !nodeIPs[ip] {
			return fmt.Errorf("IP address %s is not the node's", ip)
		}
	}
	return nil
}
