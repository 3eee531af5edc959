package fakegithub

// The App manifest flow ("Registering a GitHub App from a manifest" in
// GitHub's docs): a form POSTs manifest=<JSON> to
// /settings/apps/new?state=S (a personal account) or
// /organizations/{org}/settings/apps/new?state=S; GitHub shows the
// manifest for the signed-in user to confirm; on "Create GitHub App" it
// registers the App and redirects the browser to the manifest's
// redirect_url with ?code=C&state=S; POST /app-manifests/{code}/conversions
// (no authentication) answers 201 with the App, its pem, webhook_secret,
// client_id and client_secret. A code is good once and for an hour.
//
// The stand-in serves one App, so the App a conversion hands out is that
// App (AppID, AppSlug and AppPrivateKeyPEM): its name, permissions and
// events become the manifest's, and the webhook sender signs with the
// fresh webhook secret from then on (until SetWebhookTargets sets another).

import (
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	docsManifest   = "https://docs.github.com/apps/sharing-github-apps/registering-a-github-app-from-a-manifest"
	docsConversion = "https://docs.github.com/rest/apps/apps#create-a-github-app-from-a-manifest"

	manifestCodeTTL = time.Hour // GitHub: the code expires after one hour
)

// ManifestRegistration is an App registered through the manifest flow, as
// the stand-in recorded it.
type ManifestRegistration struct {
	Account       string // the org, or the signed-in user for a personal account
	AccountType   string // "Organization" or "User"
	Manifest      map[string]any
	Code          string
	Converted     bool
	WebhookSecret string
	ClientSecret  string
}

// manifestState is the flow's pending confirmations and codes; s.mu guards it.
type manifestState struct {
	signedIn string                           // the browser's user; see SetSignedInUser
	pending  map[string]*pendingManifest      // by confirmation token
	codes    map[string]*ManifestRegistration // by code
	issued   map[string]time.Time             // code -> when issued
	order    []*ManifestRegistration
}

type pendingManifest struct {
	account, accountType, state, redirect string
	manifest                              map[string]any
}

func (s *Server) manifests() *manifestState {
	m := &s.manifest
	if m.pending == nil {
		m.signedIn = "octocat"
		m.pending = map[string]*pendingManifest{}
		m.codes = map[string]*ManifestRegistration{}
		m.issued = map[string]time.Time{}
	}
	return m
}

// SetSignedInUser sets who the browser is signed in as on the stand-in's
// web pages ("octocat" by default): the owner of an App registered for a
// personal account.
func (s *Server) SetSignedInUser(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manifests() // before the assignment: a first call sets the default
	s.manifest.signedIn = login
}

// ManifestRegistrations lists the Apps registered through the manifest
// flow, oldest first.
func (s *Server) ManifestRegistrations() []ManifestRegistration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ManifestRegistration
	for _, r := range s.manifests().order {
		c := *r
		c.Manifest = maps.Clone(r.Manifest)
		out = append(out, c)
	}
	return out
}

func (s *Server) manifestRoutes() {
	s.handlePublic("POST /settings/apps/new", docsManifest, s.manifestPage)
	s.handlePublic("POST /organizations/{org}/settings/apps/new", docsManifest, s.manifestPage)
	s.handlePublic("POST /settings/apps/new/confirm", docsManifest, s.manifestConfirm)
	s.handlePublic("POST /app-manifests/{code}/conversions", docsConversion, s.convertManifest)
}

// handlePublic registers a route that needs no credential: the web pages
// (the browser's session stands in as SetSignedInUser) and the conversion,
// which GitHub documents as needing none. A credential that is present
// and wrong is still refused, as on every route.
func (s *Server) handlePublic(pattern, doc string, h handler) {
	inner := s.wrap(doc, nil, h)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if c, _ := r.Context().Value(callKey{}).(*call); c != nil && r.Header.Get("Authorization") == "" {
			c.cred = credential{kind: authNone}
		}
		inner(w, r)
	})
}

var manifestConfirmPage = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Create GitHub App</title></head>
<body>
<h1>Create GitHub App for {{.Account}}</h1>
<p>Name: <span id="name">{{.Name}}</span></p>
<p>Webhook URL: <span id="hook">{{.Hook}}</span></p>
<ul id="permissions">{{range $k, $v := .Perms}}<li>{{$k}}: {{$v}}</li>{{end}}</ul>
<form method="post" action="/settings/apps/new/confirm">
<input type="hidden" name="token" value="{{.Token}}">
<button id="create" type="submit">Create GitHub App for {{.Account}}</button>
</form>
</body></html>
`))

var manifestErrorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Invalid GitHub App configuration</title></head>
<body><h1>Invalid GitHub App configuration</h1><ul id="errors">{{range .}}<li>{{.}}</li>{{end}}</ul></body></html>
`))

func htmlResp(status int, t *template.Template, data any) response {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return errResp(http.StatusInternalServerError, "rendering: "+err.Error(), docsManifest)
	}
	return response{status: status, raw: []byte(b.String()), header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}}
}

// manifestPage is GitHub's "Create GitHub App" page for a posted manifest.
func (s *Server) manifestPage(c *call) response {
	form, err := url.ParseQuery(string(c.body))
	if err != nil || !strings.HasPrefix(c.r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return htmlResp(http.StatusBadRequest, manifestErrorPage, []string{"the manifest must be posted as a form"})
	}
	var manifest map[string]any
	if err := json.Unmarshal([]byte(form.Get("manifest")), &manifest); err != nil {
		return htmlResp(http.StatusUnprocessableEntity, manifestErrorPage, []string{"manifest is not JSON"})
	}
	if faults := checkManifest(manifest); len(faults) > 0 {
		return htmlResp(http.StatusUnprocessableEntity, manifestErrorPage, faults)
	}
	ms := s.manifests()
	p := &pendingManifest{account: ms.signedIn, accountType: "User", state: c.r.URL.Query().Get("state"),
		redirect: manifest["redirect_url"].(string), manifest: manifest}
	if org := c.r.PathValue("org"); org != "" {
		p.account, p.accountType = org, "Organization"
	}
	token := randomToken()
	ms.pending[token] = p
	perms, _ := manifest["default_permissions"].(map[string]any) // checked by checkManifest
	hook, _ := manifest["hook_attributes"].(map[string]any)
	return htmlResp(http.StatusOK, manifestConfirmPage, map[string]any{
		"Account": p.account, "Name": manifest["name"], "Hook": hook["url"], "Perms": perms, "Token": token,
	})
}

// checkManifest is what GitHub refuses in a manifest: url is required; a
// hook URL and redirect_url must be absolute http(s); permissions must be
// read, write or admin; events strings.
func checkManifest(m map[string]any) []string {
	var faults []string
	absURL := func(v any) bool {
		s, ok := v.(string)
		u, err := url.Parse(s)
		return ok && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}
	if !absURL(m["url"]) {
		faults = append(faults, "url is required and must be an absolute URL")
	}
	if name, ok := m["name"].(string); m["name"] != nil && (!ok || len(name) > 34) {
		faults = append(faults, "name must be a string of at most 34 characters")
	}
	if !absURL(m["redirect_url"]) {
		// GitHub would fall back to the App's settings page; the flow
		// Inspect uses needs the redirect, so the stand-in insists.
		faults = append(faults, "redirect_url must be an absolute URL")
	}
	if h, ok := m["hook_attributes"].(map[string]any); ok {
		if !absURL(h["url"]) {
			faults = append(faults, "hook_attributes.url must be an absolute URL")
		}
	} else if m["hook_attributes"] != nil {
		faults = append(faults, "hook_attributes must be an object")
	}
	perms, ok := m["default_permissions"].(map[string]any)
	if m["default_permissions"] != nil && !ok {
		faults = append(faults, "default_permissions must be an object")
	}
	for k, v := range perms {
		if lv, _ := v.(string); levelRank[lv] == 0 {
			faults = append(faults, fmt.Sprintf("default_permissions.%s: %v is not read, write or admin", k, v))
		}
	}
	if evs, ok := m["default_events"].([]any); ok {
		for _, e := range evs {
			if _, ok := e.(string); !ok {
				faults = append(faults, "default_events must be strings")
			}
		}
	} else if m["default_events"] != nil {
		faults = append(faults, "default_events must be an array")
	}
	return faults
}

// manifestConfirm is the "Create GitHub App" button: it registers the App
// and redirects to redirect_url?code=C&state=S.
func (s *Server) manifestConfirm(c *call) response {
	form, err := url.ParseQuery(string(c.body))
	ms := s.manifests()
	p := ms.pending[form.Get("token")]
	if err != nil || p == nil {
		return htmlResp(http.StatusUnprocessableEntity, manifestErrorPage, []string{"this confirmation is unknown or was used"})
	}
	delete(ms.pending, form.Get("token"))
	code := randomToken()[:20]
	reg := &ManifestRegistration{Account: p.account, AccountType: p.accountType, Manifest: p.manifest, Code: code}
	ms.codes[code] = reg
	ms.issued[code] = s.now()
	ms.order = append(ms.order, reg)
	target, err := url.Parse(p.redirect)
	if err != nil { // checked by checkManifest
		return htmlResp(http.StatusUnprocessableEntity, manifestErrorPage, []string{"redirect_url: " + err.Error()})
	}
	q := target.Query()
	q.Set("code", code)
	if p.state != "" {
		q.Set("state", p.state)
	}
	target.RawQuery = q.Encode()
	return response{status: http.StatusFound, header: http.Header{"Location": {target.String()}}}
}

// convertManifest is POST /app-manifests/{code}/conversions.
func (s *Server) convertManifest(c *call) response {
	ms := s.manifests()
	code := c.r.PathValue("code")
	reg := ms.codes[code]
	if reg == nil || reg.Converted || s.now().Sub(ms.issued[code]) > manifestCodeTTL {
		return notFound(c.doc)
	}
	reg.Converted = true
	reg.WebhookSecret = randomToken()
	reg.ClientSecret = randomToken()
	if name, ok := reg.Manifest["name"].(string); ok && name != "" {
		s.appName = name
	}
	perms := map[string]string{}
	if mp, ok := reg.Manifest["default_permissions"].(map[string]any); ok {
		for k, v := range mp {
			perms[k] = v.(string) // checked by checkManifest
		}
	}
	// Every App may read metadata, whether or not the manifest says so.
	if perms["metadata"] == "" {
		perms["metadata"] = "read"
	}
	s.appPerms = perms
	s.hook.secret = reg.WebhookSecret
	app := s.appJSON()
	if evs, ok := reg.Manifest["default_events"].([]any); ok {
		app["events"] = evs
	}
	owner := s.ensureUser(reg.Account, reg.AccountType)
	app["owner"] = map[string]any{"login": owner.login, "id": owner.id, "type": owner.typ}
	// The App's OAuth client is the one the conversion hands out, so a
	// server configured from it signs users in (oauth.go).
	o := s.oauth()
	o.clientID, o.clientSecret = "Iv1."+reg.ClientSecret[:16], reg.ClientSecret
	if cbs, ok := reg.Manifest["callback_urls"].([]any); ok {
		o.callbacks = nil
		for _, cb := range cbs {
			if u, ok := cb.(string); ok {
				o.callbacks = append(o.callbacks, u)
			}
		}
	}
	app["client_id"] = o.clientID
	app["client_secret"] = o.clientSecret
	app["webhook_secret"] = reg.WebhookSecret
	app["pem"] = string(s.keyPEM)
	return jsonResp(http.StatusCreated, app)
}

func randomToken() string { return randomHex(20) }
