package ghclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

func TestParsePrivateKeyTakesRSAInPKCS1OrPKCS8(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec8, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	cases := []struct {
		name string
		pem  []byte
		ok   bool
	}{
		{"PKCS#1, as GitHub issues them", encode("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), true},
		{"PKCS#8 RSA", encode("PRIVATE KEY", pkcs8), true},
		{"PKCS#8 EC", encode("PRIVATE KEY", ec8), false},
		{"not a key", encode("PRIVATE KEY", []byte("junk")), false},
		{"not PEM", []byte("-----BEGIN nothing"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, err := parsePrivateKey(c.pem)
			if c.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
			if c.ok && !key.Equal(rsaKey) {
				t.Error("parsed a different key")
			}
		})
	}
	if _, err := NewGitHubClients("https://api.github.com", 1, []byte("junk"), "test", nil); err == nil {
		t.Error("NewGitHubClients took a bad key; it must fail at start-up")
	}
}

func TestInstallationClientsAreCachedPerInstallation(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := NewGitHubClients("https://ghe.example/api/v3", 1, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := clients.Installation(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, err := clients.Installation(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	other, err := clients.Installation(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	if a != again || a == other {
		t.Error("want one client per installation, reused")
	}
	if got := a.BaseURL.String(); got != "https://ghe.example/api/v3/" {
		t.Errorf("base URL = %s, want api_url as given, with a slash", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := clients.App(cancelled); err == nil {
		t.Error("App ignored a cancelled context")
	}
}

func TestClientCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	c := newClientCache(2)
	built := map[int64]int{}
	get := func(id int64) *github.Client {
		return c.get(id, func() *github.Client { built[id]++; return github.NewClient(nil) })
	}
	one := get(1)
	get(2)
	if get(1) != one { // 1 is now the most recent
		t.Fatal("a cached client was rebuilt")
	}
	get(3) // evicts 2
	get(1)
	get(2)
	if built[1] != 1 || built[2] != 2 || built[3] != 1 {
		t.Errorf("builds = %v, want 1 once, 2 twice (evicted), 3 once", built)
	}
}

type recordedSlots struct{ windows []store.RateLimit }

func (r *recordedSlots) TakeRateSlot(_ context.Context, _ string, _ func() time.Time, windows []store.RateLimit) (time.Duration, error) {
	r.windows = windows
	return 0, nil
}

func TestStoreSlotsWidenEveryWindowByTheArrivalGuard(t *testing.T) {
	st := &recordedSlots{}
	if storeSlots(st, nil) != nil {
		t.Error("no windows must mean no budget")
	}
	slots := storeSlots(st, []config.RateWindow{{Limit: 80, Window: time.Minute}, {Limit: 500, Window: time.Hour}})
	if _, err := slots.Take(context.Background(), "7", time.Now); err != nil {
		t.Fatal(err)
	}
	want := []store.RateLimit{{Limit: 80, Window: time.Minute + arrivalGuard}, {Limit: 500, Window: time.Hour + arrivalGuard}}
	if len(st.windows) != len(want) || st.windows[0] != want[0] || st.windows[1] != want[1] {
		t.Errorf("windows = %+v, want %+v", st.windows, want)
	}
}

// Each replica takes an equal share of the fleet's concurrent requests,
// never less than one.
func TestConcurrencyShare(t *testing.T) {
	for _, tc := range []struct{ total, live, want int }{
		{100, 1, 100}, {100, 3, 33}, {100, 0, 100}, {2, 5, 1}, {100, 100, 1},
	} {
		if got := ConcurrencyShare(tc.total, tc.live); got != tc.want {
			t.Errorf("ConcurrencyShare(%d, %d) = %d, want %d", tc.total, tc.live, got, tc.want)
		}
	}
}
