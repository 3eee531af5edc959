// Package ghconformance checks requests to GitHub, and the webhook
// payloads the tests send, against GitHub's own OpenAPI description: the
// part Inspect uses, vendored from @octokit/openapi 23.0.2 by vendor.sh
// (github-openapi.json), validated with kin-openapi's openapi3filter.
//
// It is test support: the app's end-to-end tests record every request
// Inspect sends the GitHub stand-in and check each here, so a request the
// description does not allow fails a test, as it would fail on GitHub.
package ghconformance

import (
	"bytes"
	"context"
	_ "embed" // the vendored description
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

//go:embed github-openapi.json
var description []byte

// apiServer is where the description's paths live; requests are checked
// as if sent there, whatever host the stand-in had.
const apiServer = "https://api.github.com"

// Checker validates requests and webhook payloads.
type Checker struct {
	router routers.Router
	hooks  map[string]*openapi3.Schema // by x-webhooks name
}

// New loads the vendored description. Request bodies are closed: an
// object schema that lists properties and says nothing of others takes no
// others, so a field the description does not list fails, as a misspelt
// or invented field should (GitHub ignores some, refuses others; neither
// is what Inspect means to send).
func New() (*Checker, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(description)
	if err != nil {
		return nil, fmt.Errorf("loading the vendored description: %w", err)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					if mt.Schema != nil {
						closeObjects(mt.Schema.Value, map[*openapi3.Schema]bool{})
					}
				}
			}
		}
	}
	// The description's servers have a variable-free https host; the
	// router matches on it.
	doc.Servers = openapi3.Servers{{URL: apiServer}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing the vendored description: %w", err)
	}
	hooks, err := loadWebhooks()
	if err != nil {
		return nil, err
	}
	return &Checker{router: router, hooks: hooks}, nil
}

// closeObjects marks every object schema in s that lists properties, and
// allows no others by saying nothing of them, as allowing none. Schemas
// that combine others (allOf and the like) are left open: closing their
// parts would refuse each other's properties.
func closeObjects(s *openapi3.Schema, seen map[*openapi3.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 {
		return
	}
	if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		no := false
		s.AdditionalProperties.Has = &no
	}
	for _, p := range s.Properties {
		closeObjects(p.Value, seen)
	}
	if s.Items != nil {
		closeObjects(s.Items.Value, seen)
	}
}

// loadWebhooks loads the description's x-webhooks as the request bodies
// of made-up operations, so that their $refs resolve: OpenAPI 3.0 has no
// webhooks, and the extension is not resolved by the loader.
func loadWebhooks() (map[string]*openapi3.Schema, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(description, &raw); err != nil {
		return nil, err
	}
	var hooks map[string]json.RawMessage
	if err := json.Unmarshal(raw["x-webhooks"], &hooks); err != nil {
		return nil, fmt.Errorf("x-webhooks: %w", err)
	}
	paths := map[string]json.RawMessage{}
	for name, item := range hooks {
		paths["/x-webhooks/"+name] = item
	}
	p, err := json.Marshal(paths)
	if err != nil {
		return nil, err
	}
	raw["paths"] = p
	delete(raw, "x-webhooks")
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("loading the vendored webhooks: %w", err)
	}
	out := map[string]*openapi3.Schema{}
	for path, item := range doc.Paths.Map() {
		op := item.Post
		if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
			continue
		}
		if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			out[strings.TrimPrefix(path, "/x-webhooks/")] = mt.Schema.Value
		}
	}
	return out, nil
}

// ErrNoOperation is a request that matches no operation of the vendored
// description: an endpoint GitHub does not have, or one missing from
// operations.txt (add it there and run vendor.sh).
var ErrNoOperation = errors.New("no operation of the vendored description matches")

// Request checks one request: its method and path name an operation, and
// its path, query and body are what that operation allows.
func (c *Checker) Request(ctx context.Context, method, path, rawQuery string, body []byte) error {
	u := apiServer + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Body = http.NoBody
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, ErrNoOperation)
	}
	for k, v := range params {
		// gorillamux hands path values escaped as they came.
		if un, err := url.PathUnescape(v); err == nil {
			params[k] = un
		}
	}
	err = openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	})
	if err != nil {
		return fmt.Errorf("%s %s (%s): %w", method, path, route.Operation.OperationID, err)
	}
	return nil
}

// Webhook checks a webhook payload against x-webhooks[name] (such as
// "issue-comment-created").
func (c *Checker) Webhook(name string, payload []byte) error {
	s := c.hooks[name]
	if s == nil {
		return fmt.Errorf("webhook %s: not in the vendored description (webhooks.txt)", name)
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return fmt.Errorf("webhook %s: %w", name, err)
	}
	if err := s.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("webhook %s: %w", name, err)
	}
	return nil
}
