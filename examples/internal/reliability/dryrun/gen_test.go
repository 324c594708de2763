package dryrun

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
)

// The generators below draw specs that the examples' CRD schemas accept (OpenAPI and CEL): every value
// within its declared bounds, patterns and formats, optional fields sometimes left out. Edges of every
// range are drawn more often than the middle.

// gen wraps a random source with the helpers the generators share.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) gen { return gen{rand.New(rand.NewPCG(seed, seed^0x5bd1e995))} }

// chance reports true with probability p.
func (g gen) chance(p float64) bool { return g.r.Float64() < p }

// intIn returns a number in [lo, hi], an edge a third of the time.
func (g gen) intIn(lo, hi int64) int64 {
	switch g.r.IntN(6) {
	case 0:
		return lo
	case 1:
		return hi
	default:
		return lo + g.r.Int64N(hi-lo+1)
	}
}

func (g gen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

// runes from several scripts, HTML and shell specials, emoji, and a tab (allowed inside a name).
var nameRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,;:!?'\"<>&/\\$`{}()[]%#@*+=|~^" +
	"éèüößçñÅØÆłžčőЖжДдΩπλ中文字日本語한국어עבריתالعربية😀🚀✓\t")

// nonSpaceRunes are the runes of nameRunes that are not white space.
var nonSpaceRunes = []rune(strings.NewReplacer(" ", "", "\t", "").Replace(string(nameRunes)))

// text returns n runes drawn from set.
func (g gen) text(set []rune, n int) string {
	var b strings.Builder
	for range n {
		b.WriteRune(set[g.r.IntN(len(set))])
	}
	return b.String()
}

// displayName matches ^\S(.*\S)?$ with 1 to maxLen runes.
func (g gen) displayName(maxLen int) string {
	n := int(g.intIn(1, int64(maxLen)))
	if n == 1 {
		return g.text(nonSpaceRunes, 1)
	}
	return g.text(nonSpaceRunes, 1) + g.text(nameRunes, n-2) + g.text(nonSpaceRunes, 1)
}

// image matches ^\S+$ with 1 to 512 runes: usually a registry reference, sometimes anything.
func (g gen) image() string {
	switch g.r.IntN(4) {
	case 0:
		return g.text(nonSpaceRunes, int(g.intIn(1, 512)))
	case 1:
		return "registry.example.com:5000/" + g.dnsLabel(20) + "/" + g.dnsLabel(30) + "@sha256:" + strings.Repeat("ab", 32)
	default:
		return g.pick("memcached", "docker.io/library/memcached:1.6", "ghcr.io/x/y:v1.2.3", "localhost/img") + g.pick("", ":latest", ":1")
	}
}

// dnsLabel returns a lower-case DNS-1035 label of 1 to maxLen characters.
func (g gen) dnsLabel(maxLen int) string {
	n := int(g.intIn(1, int64(maxLen)))
	const first, mid = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789-"
	b := []byte{first[g.r.IntN(len(first))]}
	for i := 1; i < n; i++ {
		if i == n-1 {
			b = append(b, mid[g.r.IntN(len(mid)-1)])
			continue
		}
		b = append(b, mid[g.r.IntN(len(mid))])
	}
	return string(b)
}

// dnsSubdomain returns a DNS-1123 subdomain of at most 253 characters.
func (g gen) dnsSubdomain() string {
	parts := []string{g.dnsLabel(63)}
	for g.chance(0.4) {
		next := g.dnsLabel(63)
		if len(strings.Join(parts, "."))+1+len(next) > 253 {
			break
		}
		parts = append(parts, next)
	}
	return strings.Join(parts, ".")
}

// objectName is a metadata.name the examples' CEL rules accept (a DNS-1035 label).
func (g gen) objectName() string { return g.dnsLabel(63) }

// quantity returns a quantity string matching the schema's pattern, positive most of the time.
func (g gen) quantity(kind corev1.ResourceName) string {
	if g.chance(0.05) {
		return g.pick("0", "-1", "-100m", "-1Gi") // the schema's pattern allows a sign
	}
	switch kind {
	case corev1.ResourceCPU:
		return g.pick(strconv.Itoa(int(g.intIn(1, 4000)))+"m", strconv.Itoa(int(g.intIn(1, 16))), "0.5", "1.5", "2500m")
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return g.pick(strconv.Itoa(int(g.intIn(8, 70000)))+"Mi", strconv.Itoa(int(g.intIn(1, 64)))+"Gi", "1G", "128974848", "1e9", "512M")
	default:
		return strconv.Itoa(int(g.intIn(1, 8)))
	}
}

// resources returns compute resources as the schema allows them: cpu and memory mostly, sometimes
// ephemeral storage, extended resources, hugepages or claims.
func (g gen) resources() *corev1.ResourceRequirements {
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	if g.chance(0.15) {
		names = append(names, corev1.ResourceEphemeralStorage, "example.com/gpu", "hugepages-2Mi")
	}
	list := func() corev1.ResourceList {
		l := corev1.ResourceList{}
		for _, n := range names {
			if g.chance(0.5) {
				l[n] = resource.MustParse(g.quantity(n))
			}
		}
		if len(l) == 0 {
			return nil
		}
		return l
	}
	r := &corev1.ResourceRequirements{Limits: list(), Requests: list()}
	if g.chance(0.05) {
		r.Claims = []corev1.ResourceClaim{{Name: g.dnsLabel(20)}}
	}
	return r
}

// memcachedSpec draws a Memcached spec the CRD accepts.
func (g gen) memcachedSpec() memcachedv1.MemcachedSpec {
	s := memcachedv1.MemcachedSpec{Size: int32(g.intIn(1, 100))}
	if g.chance(0.5) {
		s.Image = g.image()
	}
	if g.chance(0.5) {
		s.ImagePullPolicy = corev1.PullPolicy(g.pick("Always", "IfNotPresent", "Never"))
	}
	if g.chance(0.6) {
		s.Port = int32(g.intIn(1, 65535))
	}
	if g.chance(0.6) {
		s.CacheSizeMB = int32(g.intIn(8, 65536))
	}
	if g.chance(0.5) {
		s.MaxConnections = int32(g.intIn(16, 65536))
	}
	if g.chance(0.4) {
		s.MaxUnavailable = ptr.To(int32(g.intIn(0, int64(s.Size)-1)))
	}
	if g.chance(0.5) {
		s.Resources = g.resources()
	}
	return s
}

// email draws an address the "email" format accepts.
func (g gen) email() string {
	local := g.text([]rune("abcdefghijklmnopqrstuvwxyz0123456789"), int(g.intIn(1, 20))) + g.pick("", ".x", "+tag", "_y", "-z")
	return local + "@" + g.dnsLabel(30) + "." + g.pick("com", "org", "example", "io")
}

// welcomeSpec draws a Welcome spec the CRD accepts.
func (g gen) welcomeSpec() welcomev1.WelcomeSpec {
	s := welcomev1.WelcomeSpec{Name: g.displayName(64)}
	if g.chance(0.4) {
		s.Image = g.image()
	}
	if g.chance(0.6) {
		s.Replicas = ptr.To(int32(g.intIn(0, 10)))
	}
	if g.chance(0.6) {
		s.Port = int32(g.intIn(1, 65535))
	}
	switch g.r.IntN(3) {
	case 0:
		s.ServiceType = corev1.ServiceTypeClusterIP
	case 1:
		s.ServiceType = corev1.ServiceTypeNodePort
		if g.chance(0.5) {
			s.NodePort = ptr.To(int32(g.intIn(30000, 32767)))
		}
	}
	if g.chance(0.5) {
		s.UserID = ptr.To(g.intIn(1, 65535))
	}
	if g.chance(0.6) {
		seen := map[string]bool{}
		for range g.intIn(0, 16) {
			const first, rest = "abcdefghijklmnopqrstuvwxyz_", "abcdefghijklmnopqrstuvwxyz0123456789_-"
			name := g.text([]rune(first), 1) + g.text([]rune(rest), int(g.intIn(0, 31)))
			if !seen[name] {
				seen[name] = true
				s.Groups = append(s.Groups, name)
			}
		}
	}
	if g.chance(0.6) {
		s.Email = g.email()
	}
	if g.chance(0.5) {
		key := g.text([]rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"), int(g.intIn(1, 253)))
		if g.chance(0.1) {
			key = g.pick(".password", "pass..word", "-", "_") // the schema's edges ('.' and '..x' are refused)
		}
		if key == "." || strings.HasPrefix(key, "..") {
			key = "k" + key
		}
		s.PasswordSecretRef = &welcomev1.SecretKeyRef{Name: g.dnsSubdomain(), Key: key}
	}
	return s
}

// resourceVersion draws what a Secret's resourceVersion may look like.
func (g gen) resourceVersion() string { return fmt.Sprint(g.intIn(1, 1<<40)) }
