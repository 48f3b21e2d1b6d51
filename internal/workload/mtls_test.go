package workload

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, der: der}
}

// issue signs a leaf certificate for cn: a server's (for 127.0.0.1) or a
// client's. It returns the certificate and key as PEM.
func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Mutual TLS: a server that requires a client certificate signed by its
// CA answers a driver given workload.tls ca_file, cert_file and key_file
// (files, read by LoadTLS as a scenario's are), and sees the client's
// name; without a certificate, or with one from another CA, the attempt
// fails as a connection error, never as ok.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := newTestCA(t, "faultbench test CA"), newTestCA(t, "someone else's CA")
	serverCert, serverKey := ca.issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := ca.issue(t, "faultbench-client", x509.ExtKeyUsageClientAuth)
	strangerCert, strangerKey := other.issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	caFile := writeFile(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der}))
	writeFile(t, dir, "client.pem", clientCert)
	writeFile(t, dir, "client-key.pem", clientKey)
	writeFile(t, dir, "stranger.pem", strangerCert)
	writeFile(t, dir, "stranger-key.pem", strangerKey)

	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"client": cn})
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()

	spec := []RequestSpec{{Path: "/whoami", Expect: ExpectSpec{Status: []int{200}, JSON: map[string]string{"$.client": "faultbench-client"}}}}
	cases := []struct {
		name string
		tls  TLSSpec
		ok   bool
	}{
		{"client certificate from the server's CA", TLSSpec{CAFile: "ca.pem", CertFile: "client.pem", KeyFile: "client-key.pem"}, true},
		{"no client certificate", TLSSpec{CAFile: "ca.pem"}, false},
		{"client certificate from another CA", TLSSpec{CAFile: "ca.pem", CertFile: "stranger.pem", KeyFile: "stranger-key.pem"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc, err := LoadTLS(c.tls, dir) // relative names, as a scenario's, from its directory
			if err != nil {
				t.Fatal(err)
			}
			for _, keepalive := range []bool{true, false} {
				d := driverFor(t, spec, func(cfg *DriverConfig) { cfg.TLS, cfg.Keepalive = tc, keepalive })
				a := attempt(srv)
				r := d.Do(context.Background(), a)
				if c.ok && r.Outcome != record.OK {
					t.Errorf("keepalive %v: outcome %v (check %q, status %d), want ok", keepalive, r.Outcome, r.Check, r.Status)
				}
				if !c.ok && r.Outcome != record.ConnError {
					t.Errorf("keepalive %v: outcome %v (status %d), want conn_error: the server refused the handshake", keepalive, r.Outcome, r.Status)
				}
			}
		})
	}
	if _, err := LoadTLS(TLSSpec{CAFile: caFile, CertFile: "client.pem"}, dir); err == nil {
		t.Error("a client certificate without its key was accepted")
	}
}
