package workload

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// TLSSpec is workload.tls: the targets speak HTTPS. With neither CAFile
// nor Insecure the system's roots verify the server.
type TLSSpec struct {
	CAFile     string // PEM file of the CA(s) that signed the servers' certificates
	CertFile   string // client certificate (PEM), with KeyFile, for mutual TLS
	KeyFile    string
	Insecure   bool   // accept any server certificate (self-signed test services)
	ServerName string // name to verify and send as SNI; default the target's host
}

// ErrTLS is wrapped by every error LoadTLS returns.
var ErrTLS = errors.New("bad tls")

// TLSError names the workload.tls key at fault.
type TLSError struct {
	Key string // ca_file, cert_file, key_file
	Err error
}

func (e *TLSError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *TLSError) Unwrap() error { return e.Err }

// LoadTLS reads the files of spec (relative names from baseDir) and
// returns the client configuration. Every problem is a *TLSError.
func LoadTLS(spec TLSSpec, baseDir string) (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: spec.Insecure, ServerName: spec.ServerName, MinVersion: tls.VersionTLS12}
	var errs []error
	if spec.CAFile != "" {
		pool, err := loadCA(resolvePath(baseDir, spec.CAFile))
		if err != nil {
			errs = append(errs, &TLSError{Key: "ca_file", Err: err})
		}
		cfg.RootCAs = pool
	}
	switch {
	case spec.CertFile != "" && spec.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(resolvePath(baseDir, spec.CertFile), resolvePath(baseDir, spec.KeyFile))
		if err != nil {
			errs = append(errs, &TLSError{Key: "cert_file", Err: fmt.Errorf("%w: client certificate %s with key %s: %w", ErrTLS, spec.CertFile, spec.KeyFile, err)})
		}
		cfg.Certificates = []tls.Certificate{cert}
	case spec.CertFile != "" || spec.KeyFile != "":
		errs = append(errs, &TLSError{Key: "cert_file", Err: fmt.Errorf("%w: a client certificate needs both cert_file and key_file", ErrTLS)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadCA reads a PEM file that must hold at least one certificate.
func loadCA(name string) (*x509.CertPool, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
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
			return nil, fmt.Errorf("%w: %s: certificate %d: %w", ErrTLS, name, n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate (want -----BEGIN CERTIFICATE-----)", ErrTLS, name)
	}
	return pool, nil
}
