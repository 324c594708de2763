package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pollInterval is how often readiness is probed during start.
const pollInterval = 100 * time.Millisecond

// startOnce runs one start attempt with freshly reserved ports. On error the caller stops the
// processes in c.procs.
func (c *Cluster) startOnce(ctx context.Context, pki *pki, files pkiFiles) error {
	ports, err := reservePorts()
	if err != nil {
		return err
	}
	defer ports.releaseAll()
	c.ports = ports
	c.Nodes = nil
	// etcd refuses to join a cluster whose data dir belongs to another attempt's member.
	if err := os.RemoveAll(filepath.Join(c.RunDir, "data", "etcd")); err != nil {
		return fmt.Errorf("clear etcd data dir: %w", err)
	}

	server := "https://" + ports.apiServer.addr()
	kubeconfigs := map[string]*keyPair{
		"admin": pki.admin, string(ControllerManager): pki.controllerManager,
		string(Scheduler): pki.scheduler, string(Kwok): pki.kwok,
	}
	for name, user := range kubeconfigs {
		if err := writeKubeconfig(c.kubeconfigPath(name), server, pki.ca.certPEM, name, user); err != nil {
			return err
		}
	}
	c.KubeconfigPath = filepath.Join(c.RunDir, "kubeconfig")
	if err := writeKubeconfig(c.KubeconfigPath, server, pki.ca.certPEM, "admin", pki.admin); err != nil {
		return err
	}
	c.Config = &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   pki.ca.certPEM,
			CertData: pki.admin.certPEM,
			KeyData:  pki.admin.keyPEM,
		},
		QPS:   200,
		Burst: 400,
	}
	probe := newProbeClient(pki)
	defer probe.CloseIdleConnections()

	// etcd
	ports.etcdClient.release()
	ports.etcdPeer.release()
	etcd, err := c.launch(Etcd, c.etcdArgs(ports))
	if err != nil {
		return err
	}
	etcdURL := "http://" + ports.etcdClient.addr()
	if err := c.waitFor(ctx, etcd, "/health", etcdReady(probe, etcdURL, "http://"+ports.etcdPeer.addr())); err != nil {
		return err
	}

	// kube-apiserver
	ports.apiServer.release()
	apiServer, err := c.launch(APIServer, c.apiServerArgs(ports, files))
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, apiServer, "/readyz", httpOK(probe, server+"/readyz", "")); err != nil {
		return err
	}

	// kube-controller-manager and kube-scheduler start side by side; both need only the API server.
	ports.controllerManager.release()
	kcm, err := c.launch(ControllerManager, c.controllerManagerArgs(ports, files))
	if err != nil {
		return err
	}
	var scheduler *process
	if !c.cfg.noScheduler {
		ports.scheduler.release()
		scheduler, err = c.launch(Scheduler, c.schedulerArgs(ports, files))
		if err != nil {
			return err
		}
	}
	if err := c.waitFor(ctx, kcm, "/healthz", httpOK(probe, "https://"+ports.controllerManager.addr()+"/healthz", "")); err != nil {
		return err
	}
	if scheduler != nil {
		if err := c.waitFor(ctx, scheduler, "/readyz", httpOK(probe, "https://"+ports.scheduler.addr()+"/readyz", "")); err != nil {
			return err
		}
	}

	// kwok, then the nodes it manages.
	ports.kwok.release()
	kwok, err := c.launch(Kwok, c.kwokArgs(ports))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	// Creating the nodes while kwok starts saves a round of waiting; kwok picks them up on start.
	c.Nodes, err = createNodes(ctx, cs, c.cfg.nodes)
	if err != nil {
		return c.startError(APIServer, err)
	}
	if err := c.waitFor(ctx, kwok, "/healthz", httpOK(probe, "http://"+ports.kwok.addr()+"/healthz", "")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, kwok, fmt.Sprintf("%d nodes Ready", len(c.Nodes)), nodesReady(cs, c.Nodes)); err != nil {
		return err
	}
	return c.waitFor(ctx, kcm, "ServiceAccount default/default", defaultServiceAccount(cs))
}

// launch starts comp with args (plus any extra arguments) and records it for stopping.
func (c *Cluster) launch(comp Component, args []string) (*process, error) {
	args = append(args, c.cfg.extraArgs[comp]...)
	var env []string
	if comp == Kwok {
		// kwok also loads ~/.kwok/kwok.yaml when it exists; a private HOME keeps the user's out.
		home := filepath.Join(c.RunDir, "data", "kwok-home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			return nil, fmt.Errorf("create kwok home: %w", err)
		}
		env = append(env, "HOME="+home)
	}
	p, err := startProcess(comp, c.bins.paths[comp], args, env, c.logPath(comp))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	if supervised(comp) {
		go c.supervise(p, args, env)
	}
	c.cfg.logger.V(1).Info("launched component", "component", comp, "pid", p.cmd.Process.Pid)
	return p, nil
}

// waitFor polls check until it succeeds. It fails, blaming owner, when ctx ends; it fails
// blaming the dead component when any started component exits meanwhile.
func (c *Cluster) waitFor(ctx context.Context, owner *process, what string, check func(context.Context) error) error {
	start := time.Now()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last := check(attemptCtx)
		cancel()
		if last == nil {
			c.cfg.logger.V(1).Info("component ready", "component", owner.component, "check", what,
				"duration", time.Since(start).Round(time.Millisecond).String())
			return nil
		}
		c.mu.Lock()
		procs := slices.Clone(c.procs)
		c.mu.Unlock()
		for _, p := range procs {
			if done, err := p.exited(); done && !c.willRestart(p) {
				return c.startError(p.component, fmt.Errorf("exited (%s) while waiting for %s %s; last check: %v",
					exitDescription(err), owner.component, what, last))
			}
		}
		select {
		case <-ctx.Done():
			return c.startError(owner.component, fmt.Errorf("waiting for %s: %w; last check: %v", what, ctx.Err(), last))
		case <-ticker.C:
		}
	}
}

func (c *Cluster) kubeconfigPath(name string) string {
	return filepath.Join(c.RunDir, "kubeconfigs", name+".kubeconfig")
}

// writeKubeconfig writes a kubeconfig for user at server with embedded certificates.
func writeKubeconfig(path, server string, caPEM []byte, userName string, user *keyPair) error {
	const name = "convergo"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{ClientCertificateData: user.certPEM, ClientKeyData: user.keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: userName}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", filepath.Base(path), err)
	}
	return nil
}

func (c *Cluster) etcdArgs(p *ports) []string {
	client := "http://" + p.etcdClient.addr()
	peer := "http://" + p.etcdPeer.addr()
	return []string{
		"--name=convergo",
		"--data-dir=" + filepath.Join(c.RunDir, "data", "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=convergo=" + peer,
		"--initial-cluster-state=new",
		// Test data need not survive a power cut; fsync dominates etcd's latency on small disks.
		"--unsafe-no-fsync=true",
	}
}

func (c *Cluster) apiServerArgs(p *ports, f pkiFiles) []string {
	return []string{
		"--etcd-servers=http://" + p.etcdClient.addr(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.apiServer.port),
		"--cert-dir=" + filepath.Join(c.RunDir, "data", "apiserver-certs"),
		"--tls-cert-file=" + f.apiServerCert,
		"--tls-private-key-file=" + f.apiServerKey,
		"--client-ca-file=" + f.caCert,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + f.serviceAccountPub,
		"--service-account-signing-key-file=" + f.serviceAccountKey,
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--authorization-mode=RBAC",
		// With a loopback advertise address the endpoint reconciler logs an error every 10 s.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
	}
}

func (c *Cluster) controllerManagerArgs(p *ports, f pkiFiles) []string {
	return []string{
		"--kubeconfig=" + c.kubeconfigPath(string(ControllerManager)),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.controllerManager.port),
		"--tls-cert-file=" + f.componentServingCert,
		"--tls-private-key-file=" + f.componentServingKey,
		"--leader-elect=false",
		"--controllers=*",
		// One identity for all controllers (a system:masters client certificate): starts in under a
		// second, where per-controller service-account credentials cost about 5 s.
		"--use-service-account-credentials=false",
		"--root-ca-file=" + f.caCert,
		"--service-account-private-key-file=" + f.serviceAccountKey,
		"--cluster-signing-cert-file=" + f.caCert,
		"--cluster-signing-key-file=" + f.caKey,
		// The default is under /usr/libexec, which the controller-manager would try to create.
		"--flex-volume-plugin-dir=" + filepath.Join(c.RunDir, "data", "flexvolume"),
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		observePaths,
	}
}

func (c *Cluster) schedulerArgs(p *ports, f pkiFiles) []string {
	return []string{
		"--kubeconfig=" + c.kubeconfigPath(string(Scheduler)),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.scheduler.port),
		"--tls-cert-file=" + f.componentServingCert,
		"--tls-private-key-file=" + f.componentServingKey,
		"--leader-elect=false",
		observePaths,
	}
}

func (c *Cluster) kwokArgs(p *ports) []string {
	return []string{
		"--kubeconfig=" + c.kubeconfigPath(string(Kwok)),
		"--config=" + c.bins.stagesFile,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + nodeAnnotation + "=" + nodeAnnotationValue,
		"--node-lease-duration-seconds=40",
		"--cidr=" + podCIDR,
		"--node-ip=127.0.0.1",
		"--server-address=" + p.kwok.addr(),
	}
}

// newProbeClient returns an HTTP client that trusts the cluster CA and presents the admin
// certificate, for the health endpoints of every component.
func newProbeClient(p *pki) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.cert)
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{
				RootCAs:    pool,
				MinVersion: tls.VersionTLS12,
				Certificates: []tls.Certificate{{
					Certificate: [][]byte{p.admin.cert.Raw},
					PrivateKey:  p.admin.key,
					Leaf:        p.admin.cert,
				}},
			},
			DisableKeepAlives: true,
		},
	}
}

// httpOK checks that GET url answers 200 (and, if wantBody is set, a body containing it).
func httpOK(client *http.Client, url, wantBody string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := httpDo(ctx, client, http.MethodGet, url, "", wantBody)
		return err
	}
}

func httpDo(ctx context.Context, client *http.Client, method, url, body, wantBody string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(data)))
	}
	if wantBody != "" && !strings.Contains(string(data), wantBody) {
		return nil, fmt.Errorf("%s %s: body %q lacks %q", method, url, strings.TrimSpace(string(data)), wantBody)
	}
	return data, nil
}

// etcdReady checks etcd's /health and that the etcd answering is ours: its member list holds our
// peer URL. Without the second check, another package's etcd that took our client port between
// reservation and bind would pass for ours until ours exited.
func etcdReady(client *http.Client, clientURL, peerURL string) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := httpDo(ctx, client, http.MethodGet, clientURL+"/health", "", `"health":"true"`); err != nil {
			return err
		}
		data, err := httpDo(ctx, client, http.MethodPost, clientURL+"/v3/cluster/member/list", "{}", "")
		if err != nil {
			return err
		}
		var list struct {
			Members []struct {
				PeerURLs []string `json:"peerURLs"`
			} `json:"members"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return fmt.Errorf("decode etcd member list: %w", err)
		}
		for _, m := range list.Members {
			if slices.Contains(m.PeerURLs, peerURL) {
				return nil
			}
		}
		return fmt.Errorf("etcd at %s is not ours: no member with peer URL %s in %s", clientURL, peerURL, data)
	}
}
