package redistest

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
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redisproc"
)

// TLSServer is a redis-server that speaks only TLS.
type TLSServer struct {
	*Server
	// CAFile is the PEM certificate of the CA that signed the server and
	// client certificates.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key (PEM),
	// signed by the CA.
	CertFile, KeyFile string
}

// URL returns rediss://127.0.0.1:<port>/0.
func (s *TLSServer) URL() string { return "rediss://" + s.Addr + "/0" }

// StartTLS generates a CA, a server certificate for 127.0.0.1 and localhost
// and a client certificate (crypto/x509, ECDSA P-256, valid one hour), then
// starts redis-server with --port 0 and --tls-port on a free port. By default
// the server requires a client certificate (tls-auth-clients yes); pass
// "--tls-auth-clients", "no" in extra to accept clients without one. The
// server is stopped when tb ends.
func StartTLS(tb testing.TB, extra ...string) *TLSServer {
	tb.Helper()
	dir := tb.TempDir()
	files, err := writeCerts(dir)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := launch(func(port int, sdir string) []string {
		args := append(redisproc.BaseArgs(0, sdir), "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", files["server.crt"], "--tls-key-file", files["server.key"],
			"--tls-ca-cert-file", files["ca.crt"])
		return append(args, extra...)
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return &TLSServer{Server: s, CAFile: files["ca.crt"], CertFile: files["client.crt"], KeyFile: files["client.key"]}
}

// writeCerts writes ca.crt, server.crt/.key and client.crt/.key into dir and
// returns their paths by name.
func writeCerts(dir string) (map[string]string, error) {
	files := map[string]string{}
	write := func(name, typ string, der []byte) error {
		p := filepath.Join(dir, name)
		files[name] = p
		return os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lockctl test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if err := write("ca.crt", "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	for i, name := range []string{"server", "client"} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)),
			Subject:      pkix.Name{CommonName: "lockctl test " + name},
			NotBefore:    now.Add(-time.Minute),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := write(name+".crt", "CERTIFICATE", der); err != nil {
			return nil, err
		}
		if err := write(name+".key", "PRIVATE KEY", kder); err != nil {
			return nil, err
		}
	}
	return files, nil
}
