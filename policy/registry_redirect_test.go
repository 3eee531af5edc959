package policy

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestDecideRegistryRedirect(t *testing.T) {
	const storage = "https://storage.googleapis.com/proxy-golang-org-prod/8e29-google.golang.org:api-v0.162.0.zip?Expires=1722887934&Signature=abc"
	type want struct{ allowed, credential bool }
	follow, followBare, refused := want{true, true}, want{true, false}, want{}
	upstream := []string{"proxy.golang.org"}
	goStorage := []string{"storage.googleapis.com"}
	cases := []struct {
		name     string
		kind     string
		class    RegistryClass
		path     string
		hop      int
		from, to string
		redirect []string
		want     want
	}{
		{"zip to the storage host", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", storage, goStorage, followBare},
		{"zip to the storage host, its name in capitals", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", strings.Replace(storage, "storage.googleapis.com", "Storage.GoogleAPIs.com", 1), goStorage, followBare},
		{"zip to the storage host on its https port", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", strings.Replace(storage, "storage.googleapis.com", "storage.googleapis.com:443", 1), goStorage, followBare},
		{"zip to the storage host on another port", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", strings.Replace(storage, "storage.googleapis.com", "storage.googleapis.com:8443", 1), goStorage, refused},
		{"a listed host:port", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "http", "http://127.0.0.1:4711/b/x.zip?s=1", []string{"127.0.0.1:4711"}, followBare},
		{"a listed host:port, another port", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "http", "http://127.0.0.1:4712/b/x.zip", []string{"127.0.0.1:4711"}, refused},
		{"the fifth hop", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 5, "https", storage, goStorage, followBare},
		{"the sixth hop", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 6, "https", storage, goStorage, refused},
		{"metadata to the storage host", RegistryGoProxy, RegistryMetadata, "m/@v/list", 1, "https", "https://storage.googleapis.com/b/list", goStorage, refused},
		{"metadata to the upstream's own host", RegistryGoProxy, RegistryMetadata, "m/@v/list", 1, "https", "https://proxy.golang.org/m/@v/list", nil, follow},
		{"an artifact to the upstream's own host keeps the credential", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "https://proxy.golang.org/m/@v/v1.0.0.zip", goStorage, follow},
		{"a host nobody listed", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "https://evil.example/x.zip", goStorage, refused},
		{"a listed host's subdomain", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "https://x.storage.googleapis.com/x.zip", goStorage, refused},
		{"a listed host as a suffix", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "https://evilstorage.googleapis.com/x.zip", goStorage, refused},
		{"https down to http", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "http://storage.googleapis.com/x.zip", goStorage, refused},
		// The upstream's own host gets the credential, so a downgrade to
		// it would send the credential in clear: refused before any host
		// is looked at, whatever the port or the class.
		{"https down to http on the upstream's own host", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "http://proxy.golang.org/m/@v/v1.0.0.zip", goStorage, refused},
		{"https down to http on the upstream's own host, its https port", RegistryGoProxy, RegistryMetadata, "m/@v/list", 1, "https", "http://proxy.golang.org:443/m/@v/list", nil, refused},
		{"https down to http on the upstream's own host, a later hop", RegistryGoProxy, RegistryMetadata, "m/@v/list", 3, "https", "http://PROXY.golang.org/m/@v/list", nil, refused},
		{"http up to https", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "http", storage, goStorage, followBare},
		{"another scheme", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "ftp://storage.googleapis.com/x.zip", goStorage, refused},
		{"a user in the URL", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "https://u:p@storage.googleapis.com/x.zip", goStorage, refused},
		{"no host", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.zip", 1, "https", "/relative/x.zip", goStorage, refused},
		// A module's .mod and .info and the checksum database are not
		// package files, artifacts though some are: they stay home.
		{".mod to the storage host", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.mod", 1, "https", storage, goStorage, refused},
		{"a canonical .info to the storage host", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.info", 1, "https", storage, goStorage, refused},
		{"a full tile to the storage host", RegistryGoProxy, RegistryArtifact, "sumdb/sum.golang.org/tile/8/0/001", 1, "https", storage, goStorage, refused},
		{"@latest to the storage host", RegistryGoProxy, RegistryMetadata, "m/@latest", 1, "https", storage, goStorage, refused},
		{"a query's .info to the storage host", RegistryGoProxy, RegistryMetadata, "m/@v/main.info", 1, "https", storage, goStorage, refused},
		{"a .mod to the upstream's own host", RegistryGoProxy, RegistryArtifact, "m/@v/v1.0.0.mod", 1, "https", "https://proxy.golang.org/m/@v/v1.0.0.mod", goStorage, follow},
		{"PEP 658 metadata to a listed host", RegistryPyPI, RegistryArtifact, "files/f.whl.metadata", 1, "https", "https://mirror.example/f.whl.metadata", []string{"mirror.example"}, refused},
		{"npm tarball to a listed CDN", RegistryNPM, RegistryArtifact, "t/-/t-1.0.0.tgz", 1, "https", "https://cdn.example/t.tgz", []string{"cdn.example"}, followBare},
		{"npm packument to a listed CDN", RegistryNPM, RegistryMetadata, "left-pad", 1, "https", "https://cdn.example/left-pad", []string{"cdn.example"}, refused},
		{"pypi file to a listed host", RegistryPyPI, RegistryArtifact, "files/f.whl", 1, "https", "https://mirror.example/f.whl", []string{"mirror.example"}, followBare},
		{"no such kind", "maven", RegistryArtifact, "x.jar", 1, "https", storage, goStorage, refused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			to, err := url.Parse(c.to)
			if err != nil {
				t.Fatal(err)
			}
			d := DecideRegistryRedirect(RegistryRedirect{Kind: c.kind, Class: c.class, Path: c.path, Hop: c.hop, FromScheme: c.from, To: to, UpstreamHosts: upstream, RedirectHosts: c.redirect})
			if got := (want{d.Allowed, d.Credential}); got != c.want {
				t.Fatalf("%+v, want %+v", d, c.want)
			}
			if d.Credential && c.from == "https" && to.Scheme != "https" {
				t.Fatalf("the credential goes over %s after an https request", to.Scheme)
			}
			if !d.Allowed && d.Why == "" {
				t.Fatal("refused without saying why")
			}
			if strings.Contains(d.Why, "Signature") || strings.Contains(d.Why, "Expires") {
				t.Fatalf("the refusal carries the URL's query: %s", d.Why)
			}
		})
	}
}

func TestPublicRegistryAddress(t *testing.T) {
	cases := map[string]bool{
		"142.250.185.123":      true, // storage.googleapis.com, once
		"2a00:1450:4001::1":    true,
		"127.0.0.1":            false,
		"127.8.9.10":           false,
		"::1":                  false,
		"::ffff:127.0.0.1":     false, // IPv4-mapped loopback
		"10.1.2.3":             false,
		"172.16.0.1":           false,
		"172.31.255.255":       false,
		"172.32.0.1":           true,
		"192.168.1.1":          false,
		"fd00::1":              false,
		"169.254.169.254":      false, // the cloud metadata service
		"::ffff:169.254.1.1":   false,
		"fe80::1":              false,
		"0.0.0.0":              false,
		"::":                   false,
		"100.64.0.1":           false,
		"224.0.0.1":            false,
		"ff02::1":              false,
		"255.255.255.255":      false,
		"192.0.2.1":            false,
		"8.8.8.8":              true,
		"::ffff:8.8.8.8":       true,
		"64:ff9b:1::a00:1":     false,
		"2001:db8::1":          false,
		"198.18.0.1":           false,
		"203.0.113.9":          false,
		"100.128.0.1":          true,
		"fc00::1":              false,
		"febf:ffff::1":         false,
		"2606:4700:4700::1111": true,
		"64:ff9b::a9fe:a9fe":   false, // NAT64 to 169.254.169.254
		"64:ff9b::808:808":     true,  // NAT64 to 8.8.8.8
		"2002:7f00:1::1":       false, // 6to4 from 127.0.0.1
		"2002:c0a8:101::1":     false, // 6to4 from 192.168.1.1
		"2002:808:808::1":      true,
		// The IANA IPv4 Special-Purpose Address Registry's blocks that are
		// not globally reachable, and multicast
		// (https://www.iana.org/assignments/iana-ipv4-special-registry).
		"0.1.2.3":         false, // "this network", 0.0.0.0/8
		"192.0.0.1":       false, // IETF protocol assignments (DS-Lite)
		"192.0.0.170":     false, // NAT64/DNS64 discovery
		"192.88.99.1":     false, // 6to4 relay anycast, deprecated
		"198.19.255.255":  false, // benchmarking, 198.18.0.0/15
		"198.51.100.7":    false, // TEST-NET-2
		"240.0.0.1":       false, // reserved
		"255.255.255.254": false,
		"224.0.0.251":     false, // multicast (mDNS)
		"239.255.255.250": false, // multicast (SSDP)
		"223.255.255.255": true,
		"192.88.98.1":     true,
		"192.175.48.1":    true, // AS112: globally reachable
		// IPv6: global unicast 2000::/3 only, less the IANA IPv6
		// Special-Purpose Address Registry's blocks
		// (https://www.iana.org/assignments/iana-ipv6-special-registry);
		// an embedded IPv4 address is judged itself.
		"::7f00:1":                             false, // IPv4-compatible ::/96, to 127.0.0.1
		"::808:808":                            false, // IPv4-compatible, deprecated whatever it embeds
		"::ffff:0:7f00:1":                      false, // SIIT ::ffff:0:0:0/96, to 127.0.0.1
		"::ffff:0:808:808":                     false,
		"fec0::1":                              false, // site-local, deprecated
		"feff::1":                              false,
		"100::1":                               false, // discard-only 100::/64
		"2001::1":                              false, // Teredo 2001::/32
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": false, // Teredo, RFC 4380's example
		"2001:2::1":                            false, // benchmarking
		"2001:1ff::1":                          false, // IETF protocol assignments 2001::/23
		"2001:200::1":                          true,  // the first allocation after it
		"3fff::1":                              false, // documentation 3fff::/20
		"3fff:1000::1":                         true,
		"5f00::1":                              false, // SRv6 SIDs, outside 2000::/3
		"ff0e::1":                              false, // global-scope multicast
		"ff05::2":                              false,
		"64:ff9b:1::808:808":                   false, // local-use NAT64, whatever it embeds
		"64:ff9b::c058:6301":                   false, // NAT64 to 192.88.99.1
		"64:ff9b::c612:1":                      false, // NAT64 to 198.18.0.1
		"2002:c058:6301::1":                    false, // 6to4 from 192.88.99.1
		"2002:e000:1::1":                       false, // 6to4 from 224.0.0.1
		"4000::1":                              false, // not yet allocated, outside 2000::/3
		"2620:4f:8000::1":                      false, // AS112 direct delegation: special-purpose
		"fe80::1%eth0":                         false,
		"2a00:1450:4001::1%eth0":               true,
	}
	for s, want := range cases {
		ok, why := PublicRegistryAddress(netip.MustParseAddr(s))
		if ok != want {
			t.Errorf("%s: %v (%s), want %v", s, ok, why, want)
		}
		if !ok && why == "" {
			t.Errorf("%s refused without saying why", s)
		}
	}
	if ok, _ := PublicRegistryAddress(netip.Addr{}); ok {
		t.Error("the zero address passed")
	}
}
