package policy

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// MaxRegistryRedirects bounds the redirects one registry request follows
// (the public Go proxy needs one: a zip's 302 to its storage host).
const MaxRegistryRedirects = 5

// RegistryRedirect is a redirect an upstream answered to a request the
// registry egress sent it (decision 0052).
type RegistryRedirect struct {
	// Kind and Class are the registry's kind and what the request was
	// for (DecideRegistryRequest's Class).
	Kind  string
	Class RegistryClass
	// Path is the request's path below the registry's base, as
	// DecideRegistryRequest saw it.
	Path string
	// Hop counts the redirects followed with this one: 1 for the first.
	Hop int
	// FromScheme is the scheme of the request the egress first sent.
	FromScheme string
	// To is where the redirect leads (Location, resolved).
	To *url.URL
	// UpstreamHosts are the hosts of the registry's url (and files_url),
	// host or host:port as the config names them; RedirectHosts are its
	// redirect_hosts.
	UpstreamHosts, RedirectHosts []string
}

// RegistryRedirectDecision says whether the egress follows a redirect and
// whether the upstream's credential goes with it.
type RegistryRedirectDecision struct {
	Allowed bool
	// Credential is true only for a hop to the upstream's own hosts: a
	// storage host gets no Authorization, its URL's signature is its
	// credential.
	Credential bool
	// Why is the refusal, for the log; it names the host, never the
	// URL's query (a signed URL's signature).
	Why string
}

// DecideRegistryRedirect decides one redirect. The upstream's own hosts
// are followed, credential and all, for any request, as before. A host
// the registry's redirect_hosts list is followed without the credential,
// and only for a package file (offsiteArtifact): its bytes are checked by
// hash, while metadata, which says what those hashes are, comes from the
// configured hosts alone. Never more than MaxRegistryRedirects hops, never to a URL with a
// user or password, never from https down to http. The address the name
// resolves to is checked when it is dialed (PublicRegistryAddress).
func DecideRegistryRedirect(r RegistryRedirect) RegistryRedirectDecision {
	refuse := func(why string) RegistryRedirectDecision { return RegistryRedirectDecision{Why: why} }
	if r.Hop > MaxRegistryRedirects {
		return refuse("more than 5 redirects")
	}
	if r.To == nil || r.To.Host == "" || r.To.Opaque != "" {
		return refuse("a redirect to no host")
	}
	host := strings.ToLower(r.To.Host)
	if r.To.User != nil {
		return refuse("a redirect to " + host + " carrying a user or password")
	}
	switch {
	case r.To.Scheme == "https":
	case r.To.Scheme == "http" && r.FromScheme == "http":
	default:
		return refuse("a redirect to " + host + " over " + r.To.Scheme + ", from " + r.FromScheme)
	}
	for _, h := range r.UpstreamHosts {
		if sameHost(h, r.To) {
			return RegistryRedirectDecision{Allowed: true, Credential: true}
		}
	}
	for _, h := range r.RedirectHosts {
		if !sameHost(h, r.To) {
			continue
		}
		if !offsiteArtifact(r.Kind, r.Class, r.Path) {
			return refuse("a redirect of " + r.Path + " to " + host + ": only package files, checked by their hash, may come from redirect_hosts")
		}
		return RegistryRedirectDecision{Allowed: true}
	}
	return refuse("a redirect to " + host + ", which neither this registry's url nor its redirect_hosts name")
}

// offsiteArtifact is what a kind may fetch from a redirect_hosts host:
// the package files themselves, whose hashes the client checks against
// what the configured hosts said (a module zip against go.sum and the
// checksum database, a tarball against the packument's integrity, a
// PyPI file against the index's sha256). A module's .info and .mod, the
// checksum database and every index stay on the configured hosts.
func offsiteArtifact(kind string, class RegistryClass, path string) bool {
	if class != RegistryArtifact {
		return false
	}
	switch kind {
	case RegistryGoProxy:
		return strings.Contains(path, "/@v/") && strings.HasSuffix(path, ".zip") && !strings.HasPrefix(path, "sumdb/")
	case RegistryNPM:
		return strings.HasSuffix(path, ".tgz")
	case RegistryPyPI:
		return strings.HasPrefix(path, "files/") && !strings.HasSuffix(path, ".metadata")
	}
	return false
}

// sameHost reports whether the configured host (host, or host:port)
// names u's host: a bare host matches the scheme's default port only.
func sameHost(configured string, u *url.URL) bool {
	configured = strings.ToLower(strings.TrimSpace(configured))
	name, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	ch, cp, err := net.SplitHostPort(configured)
	if err != nil {
		// No port: the scheme's default.
		ch, cp = strings.Trim(configured, "[]"), map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return ch != "" && ch == name && cp == port
}

// nonPublicPrefixes are the ranges PublicRegistryAddress refuses beyond
// what netip classifies itself: "this network", carrier-grade NAT (a
// cloud's internal addresses), and the IETF, documentation and benchmark
// blocks (RFC 6890's special-purpose registry).
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// PublicRegistryAddress reports whether a redirect hop may connect to ip:
// never loopback, private, link-local (the cloud metadata service at
// 169.254.169.254), unspecified, multicast or another special-purpose
// address, whatever name led there, so that neither an upstream's
// redirect nor a name that resolves to an inside address (DNS
// rebinding) reaches the app's own network. Why says which, when not.
func PublicRegistryAddress(ip netip.Addr) (ok bool, why string) {
	ip = ip.Unmap()
	if v4, embedded := embeddedIPv4(ip); embedded {
		// NAT64 and 6to4 reach the IPv4 address inside: judge that.
		return PublicRegistryAddress(v4)
	}
	switch {
	case !ip.IsValid():
		return false, "no address"
	case ip.IsLoopback():
		return false, "a loopback address"
	case ip.IsPrivate():
		return false, "a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return false, "a link-local address"
	case ip.IsUnspecified():
		return false, "the unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return false, "a multicast address"
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(ip) {
			return false, "a special-purpose address"
		}
	}
	return true, ""
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 is the IPv4 address a NAT64 (RFC 6052's well-known
// prefix) or 6to4 (RFC 3056) address leads to.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}
