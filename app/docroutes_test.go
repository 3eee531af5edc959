package app_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
)

// docRoute is a route as the deploy guide names it in backticks: a method
// and a path (`POST /api/github/hook`), or a path of the server's own
// (`/v1/attempts/…`), where "…" stands for the rest of one of its routes.
var docRoute = regexp.MustCompile("`((?:GET|HEAD|POST|PUT|DELETE) )?(/(?:api|v1|healthz|readyz|metrics|sessions|snapshots|auth|provenance)[^` ]*)`")

// Every route docs/deploy.md tells an operator to send to the server, or
// to probe, is one the server serves: a load balancer set up from the
// guide must reach it (issue 34: the guide once routed the session
// channel at /api/channel/…, which nothing serves).
func TestEveryRouteTheDeployGuideNamesIsServed(t *testing.T) {
	guide, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	found := docRoute.FindAllStringSubmatch(string(guide), -1)
	if len(found) < 4 {
		t.Fatalf("the guide names %d routes; the test's pattern no longer finds them: %q", len(found), found)
	}
	// As the guide's recipes configure it: the Buildkite hook is served
	// when its token is set, the dashboard when web.* is, the provenance
	// keys when provenance.* is.
	keyFile := filepath.Join(t.TempDir(), "web-key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	signing, _ := newProvenanceKey(t)
	h := newHarness(t, func(c *config.Server) {
		c.Buildkite.WebhookToken = "bk-hook-token-0123456789"
		c.Web.PublicURL, c.Web.KeyPath = "https://inspect.example.com", keyFile
		c.Web.ClientID, c.Web.ClientSecret = "client-id", "client-secret"
		c.Provenance = config.Provenance{SigningKey: "k1", Keys: []config.ProvenanceKey{{ID: "k1", PrivateKeyPath: signing}}}
	})
	mux, ok := h.svc.Handler().(*http.ServeMux)
	if !ok {
		t.Fatalf("Service.Handler is a %T, not the mux this test asks", h.svc.Handler())
	}
	for _, m := range found {
		method, path := strings.TrimSpace(m[1]), m[2]
		// "…" is the rest of a route: the channel's claim stands for the
		// channel's routes, as every attempt's first request.
		path = strings.ReplaceAll(path, "…", "a1/claim")
		methods := []string{method}
		if method == "" {
			methods = []string{http.MethodGet, http.MethodPost}
		}
		served := false
		for _, meth := range methods {
			if _, pattern := mux.Handler(httptest.NewRequest(meth, path, nil)); pattern != "" {
				served = true
			}
		}
		if !served {
			t.Errorf("docs/deploy.md names %q, which the server does not serve", m[0])
		}
	}
}
