package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// serviceClusterIPRange is the service range given to the API server; its first address is the
// ClusterIP of the "kubernetes" Service and therefore a SAN of the serving certificate.
const (
	serviceClusterIPRange = "10.96.0.0/16"
	kubernetesServiceIP   = "10.96.0.1"
	podCIDR               = "10.244.0.0/16"
	serviceAccountIssuer  = "https://kubernetes.default.svc.cluster.local"
)

// apiServerDNSNames are the DNS SANs of the API server's serving certificate.
var apiServerDNSNames = []string{
	"localhost",
	"kubernetes",
	"kubernetes.default",
	"kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
}

// keyPair is a certificate with its private key, kept both parsed and PEM encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// certSpec describes a leaf certificate to issue from the CA.
type certSpec struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	usage        []x509.ExtKeyUsage
}

// pki is everything the control plane needs in terms of keys and certificates.
type pki struct {
	ca *keyPair
	// apiServer serves the API server's secure port.
	apiServer *keyPair
	// componentServing serves the secure ports of the controller-manager and the scheduler, so their
	// health endpoints can be probed with verified TLS.
	componentServing *keyPair
	// client certificates, one per user of the API server.
	admin, controllerManager, scheduler, kwok *keyPair
	// serviceAccountKey signs service-account tokens (API server) and is used by the token controller.
	serviceAccountKey *rsa.PrivateKey
}

// newPKI creates a fresh CA and every certificate and key of the control plane, in memory.
func newPKI() (*pki, error) {
	ca, err := newCA("convergo-cluster-ca")
	if err != nil {
		return nil, fmt.Errorf("create ca: %w", err)
	}
	p := &pki{ca: ca}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	specs := []struct {
		name string
		dst  **keyPair
		spec certSpec
	}{
		{"kube-apiserver serving", &p.apiServer, certSpec{
			commonName: "kube-apiserver",
			dnsNames:   apiServerDNSNames,
			ips:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(kubernetesServiceIP)},
			usage:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}},
		{"component serving", &p.componentServing, certSpec{
			commonName: "convergo-cluster-components",
			dnsNames:   []string{"localhost"},
			ips:        loopback,
			usage:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}},
		{"admin client", &p.admin, certSpec{
			commonName:   "convergo-admin",
			organization: []string{"system:masters"},
			usage:        []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		// The controller-manager runs with --use-service-account-credentials=false, so every
		// controller acts as this user: it needs more than the system:kube-controller-manager role.
		{"kube-controller-manager client", &p.controllerManager, certSpec{
			commonName:   "system:kube-controller-manager",
			organization: []string{"system:masters"},
			usage:        []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		{"kube-scheduler client", &p.scheduler, certSpec{
			commonName: "system:kube-scheduler",
			usage:      []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		{"kwok client", &p.kwok, certSpec{
			commonName:   "kwok-controller",
			organization: []string{"system:masters"},
			usage:        []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	}
	for _, s := range specs {
		kp, err := ca.issue(s.spec)
		if err != nil {
			return nil, fmt.Errorf("issue %s certificate: %w", s.name, err)
		}
		*s.dst = kp
	}
	p.serviceAccountKey, err = rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	return p, nil
}

// newCA creates a self-signed CA valid for ten years.
func newCA(commonName string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(tmpl, tmpl, key, key)
}

// issue signs a leaf certificate for spec with the CA.
func (ca *keyPair) issue(spec certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  spec.usage,
		DNSNames:     spec.dnsNames,
		IPAddresses:  spec.ips,
	}
	return sign(tmpl, ca.cert, key, ca.key)
}

// sign creates the certificate tmpl for key, signed by parent with parentKey, and PEM-encodes both.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("create certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key of %q: %w", tmpl.Subject.CommonName, err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial, nil
}

// pkiFiles are the paths of the PKI material the components read from disk.
type pkiFiles struct {
	caCert, caKey                             string
	apiServerCert, apiServerKey               string
	componentServingCert, componentServingKey string
	serviceAccountKey, serviceAccountPub      string
}

// write stores the files the components need under dir (mode 0600 for keys).
func (p *pki) write(dir string) (pkiFiles, error) {
	f := pkiFiles{
		caCert:               filepath.Join(dir, "ca.crt"),
		caKey:                filepath.Join(dir, "ca.key"),
		apiServerCert:        filepath.Join(dir, "apiserver.crt"),
		apiServerKey:         filepath.Join(dir, "apiserver.key"),
		componentServingCert: filepath.Join(dir, "components-serving.crt"),
		componentServingKey:  filepath.Join(dir, "components-serving.key"),
		serviceAccountKey:    filepath.Join(dir, "sa.key"),
		serviceAccountPub:    filepath.Join(dir, "sa.pub"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("create pki dir: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&p.serviceAccountKey.PublicKey)
	if err != nil {
		return f, fmt.Errorf("marshal service-account public key: %w", err)
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.caCert, p.ca.certPEM, 0o644},
		{f.caKey, p.ca.keyPEM, 0o600},
		{f.apiServerCert, p.apiServer.certPEM, 0o644},
		{f.apiServerKey, p.apiServer.keyPEM, 0o600},
		{f.componentServingCert, p.componentServing.certPEM, 0o644},
		{f.componentServingKey, p.componentServing.keyPEM, 0o600},
		{f.serviceAccountKey, pem.EncodeToMemory(&pem.Block{
			Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(p.serviceAccountKey),
		}), 0o600},
		{f.serviceAccountPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}), 0o644},
	}
	for _, file := range files {
		if err := os.WriteFile(file.path, file.data, file.mode); err != nil {
			return f, fmt.Errorf("write %s: %w", filepath.Base(file.path), err)
		}
	}
	return f, nil
}
