package policy

import (
	"fmt"
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
		return refuse(fmt.Sprintf("more than %d redirects", MaxRegistryRedirects))
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

// specialRange is an address block a redirect hop never dials, and what
// to call it in a refusal.
type specialRange struct {
	prefix netip.Prefix
	what   string
}

func special(prefix, what string) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), what}
}

// nonPublicIPv4 is every block of the IANA IPv4 Special-Purpose Address
// Registry whose "Globally Reachable" is False (or, for the deprecated
// 6to4 relay anycast, N/A)
// (https://www.iana.org/assignments/iana-ipv4-special-registry), and
// multicast, which is in no unicast registry. 192.0.0.0/24 goes whole:
// its two globally reachable /32s are NAT traversal anycast (PCP, TURN),
// never a registry. The globally reachable blocks (AS112's
// 192.31.196.0/24 and 192.175.48.0/24, AMT's 192.52.193.0/24) pass.
var nonPublicIPv4 = []specialRange{
	special("0.0.0.0/8", `"this network"`),
	special("10.0.0.0/8", "a private address"),
	special("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
	special("127.0.0.0/8", "a loopback address"),
	special("169.254.0.0/16", "a link-local address"),
	special("172.16.0.0/12", "a private address"),
	special("192.0.0.0/24", "an IETF protocol assignment"),
	special("192.0.2.0/24", "a documentation address"),
	special("192.88.99.0/24", "the deprecated 6to4 relay anycast"),
	special("192.168.0.0/16", "a private address"),
	special("198.18.0.0/15", "a benchmarking address"),
	special("198.51.100.0/24", "a documentation address"),
	special("203.0.113.0/24", "a documentation address"),
	special("224.0.0.0/4", "a multicast address"),
	special("255.255.255.255/32", "the limited broadcast address"),
	special("240.0.0.0/4", "a reserved address"),
}

// globalUnicast is 2000::/3, the only IPv6 space IANA allocates for
// global unicast (RFC 4291 section 2.4, RFC 3587); nothing outside it is
// dialed, save the NAT64 well-known prefix, judged by its IPv4 address.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// nonPublicIPv6 is every block of the IANA IPv6 Special-Purpose Address
// Registry inside 2000::/3 (as updated 2024-10-22,
// https://www.iana.org/assignments/iana-ipv6-special-registry), globally
// reachable or not: none is a registry's storage host. 2001::/23 goes
// whole (Teredo, benchmarking, ORCHID, AMT, AS112, DRIP and anycast for
// NAT traversal). 6to4 (2002::/16) is not here: it is judged by the IPv4
// address it embeds.
var nonPublicIPv6 = []specialRange{
	special("2001::/32", "a Teredo address"),
	special("2001::/23", "an IETF protocol assignment"),
	special("2001:db8::/32", "a documentation address"),
	special("2620:4f:8000::/48", "AS112's direct delegation"),
	special("3fff::/20", "a documentation address"),
}

// outsideGlobalUnicast names what an IPv6 address outside 2000::/3 is,
// for a refusal that says more than "not global unicast".
var outsideGlobalUnicast = []specialRange{
	special("::1/128", "a loopback address"),
	special("::/128", "the unspecified address"),
	special("::ffff:0:0:0/96", "an IPv4-translated (SIIT) address"),
	special("::/96", "an IPv4-compatible address (deprecated)"),
	special("64:ff9b:1::/48", "a local-use IPv4/IPv6 translation address"),
	special("100::/64", "a discard-only address"),
	special("5f00::/16", "an SRv6 segment identifier"),
	special("fc00::/7", "a private (unique local) address"),
	special("fe80::/10", "a link-local address"),
	special("fec0::/10", "a site-local address (deprecated)"),
	special("ff00::/8", "a multicast address"),
}

// PublicRegistryAddress reports whether a redirect hop may connect to ip,
// so that neither an upstream's redirect nor a name that resolves to an
// inside address (DNS rebinding) reaches the app's own network: the cloud
// metadata service at 169.254.169.254, loopback, private and shared
// addresses, and every other block IANA's special-purpose registries say
// is not globally reachable. IPv4 is refused by block; IPv6 is allowed
// only in global unicast 2000::/3, less the special-purpose blocks there.
// An address that reaches an IPv4 address (IPv4-mapped, NAT64's
// well-known prefix, 6to4) is judged by that address; the other forms
// that embed one (IPv4-compatible, SIIT, local-use NAT64, Teredo) are
// refused whatever it is. Why says what the address is, when refused.
func PublicRegistryAddress(ip netip.Addr) (ok bool, why string) {
	if !ip.IsValid() {
		return false, "no address"
	}
	// A zone only says which interface: the address is what is judged.
	ip = ip.WithZone("").Unmap()
	if ip.Is4() {
		for _, r := range nonPublicIPv4 {
			if r.prefix.Contains(ip) {
				return false, r.what
			}
		}
		return true, ""
	}
	if v4, embedded := embeddedIPv4(ip); embedded {
		if ok, why := PublicRegistryAddress(v4); !ok {
			return false, why + ", " + v4.String() + ", inside " + ip.String()
		}
		return true, ""
	}
	if !globalUnicast.Contains(ip) {
		for _, r := range outsideGlobalUnicast {
			if r.prefix.Contains(ip) {
				return false, r.what
			}
		}
		return false, "not a global unicast address"
	}
	for _, r := range nonPublicIPv6 {
		if r.prefix.Contains(ip) {
			return false, r.what
		}
	}
	return true, ""
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 is the IPv4 address a NAT64 (RFC 6052's well-known
// prefix) or 6to4 (RFC 3056) address leads to: the two forms the IPv6
// registry marks globally reachable (NAT64) or leaves to what they embed
// (6to4).
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
