package kubeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the throwaway PKI of one test API server.
type pki struct {
	caCert, caKey         string // files
	serverCert, serverKey string
	adminCert, adminKey   string
	saKey, saPub          string
	caPEM, adminCertPEM   []byte
	adminKeyPEM           []byte
}

func newPKI(dir string) (*pki, error) {
	p := &pki{}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpu-node-pools-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, org []string, server bool) ([]byte, []byte, error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: org},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if server {
			t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			t.DNSNames = []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &k.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
	}
	write := func(name string, b []byte) (string, error) {
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, b, 0o600)
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	caKeyDER, _ := x509.MarshalECPrivateKey(caKey)
	if p.caCert, err = write("ca.crt", p.caPEM); err != nil {
		return nil, err
	}
	if p.caKey, err = write("ca.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: caKeyDER})); err != nil {
		return nil, err
	}
	sc, sk, err := issue(2, "kube-apiserver", nil, true)
	if err != nil {
		return nil, err
	}
	if p.serverCert, err = write("server.crt", sc); err != nil {
		return nil, err
	}
	if p.serverKey, err = write("server.key", sk); err != nil {
		return nil, err
	}
	ac, ak, err := issue(3, "admin", []string{"system:masters"}, false)
	if err != nil {
		return nil, err
	}
	p.adminCertPEM, p.adminKeyPEM = ac, ak
	if p.adminCert, err = write("admin.crt", ac); err != nil {
		return nil, err
	}
	if p.adminKey, err = write("admin.key", ak); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, _ := x509.MarshalECPrivateKey(saKey)
	pubDER, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if p.saKey, err = write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER})); err != nil {
		return nil, err
	}
	if p.saPub, err = write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})); err != nil {
		return nil, err
	}
	return p, nil
}
