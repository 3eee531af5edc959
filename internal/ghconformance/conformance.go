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
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

//go:embed github-openapi.json
var description []byte

// apiServer is where the description's paths live; requests are checked
// as if sent there, whatever host the stand-in had.
const apiServer = "https://api.github.com"

// Checker validates requests and webhook payloads.
type Checker struct {
	doc    *openapi3.T
	routes []route                     // most specific first
	hooks  map[string]*openapi3.Schema // by x-webhooks name
	// mu makes one check at a time: kin-openapi's schemas fill caches as
	// they validate, and tests running in parallel share one Checker.
	mu sync.Mutex
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
	hooks, err := loadWebhooks()
	if err != nil {
		return nil, err
	}
	return &Checker{doc: doc, routes: newRoutes(doc), hooks: hooks}, nil
}

// route is one operation's path template as a pattern.
type route struct {
	rx     *regexp.Regexp
	names  []string // the path parameters, in order
	fixed  int      // literal characters: the more, the more specific
	route  routers.Route
	method string
}

// restOfPath are the parameters GitHub's routes take with their slashes:
// a file's path, a ref ("heads/main"), a label's name ("team/inspect").
var restOfPath = map[string]bool{"path": true, "ref": true, "name": true}

var paramRE = regexp.MustCompile(`\{([^}]+)\}`)

// newRoutes makes a pattern of each operation. kin-openapi's routers take
// a parameter as one path segment, while GitHub's routes take a file's
// path or a ref with its slashes.
func newRoutes(doc *openapi3.T) []route {
	var out []route
	for path, item := range doc.Paths.Map() {
		var names []string
		fixed := len(paramRE.ReplaceAllString(path, ""))
		var pattern strings.Builder
		pattern.WriteString("^")
		last := 0
		for _, m := range paramRE.FindAllStringSubmatchIndex(path, -1) {
			pattern.WriteString(regexp.QuoteMeta(path[last:m[0]]))
			name := path[m[2]:m[3]]
			names = append(names, name)
			if restOfPath[name] {
				pattern.WriteString("(.+)")
			} else {
				pattern.WriteString("([^/]+)")
			}
			last = m[1]
		}
		pattern.WriteString(regexp.QuoteMeta(path[last:]) + "$")
		for method, op := range item.Operations() {
			out = append(out, route{rx: regexp.MustCompile(pattern.String()), names: names, fixed: fixed, method: method,
				route: routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].fixed > out[j].fixed })
	return out
}

// find is the most specific operation of method whose path matches the
// escaped path, and its parameters, unescaped.
func (c *Checker) find(method, escapedPath string) (*routers.Route, map[string]string, bool) {
	for i := range c.routes {
		r := &c.routes[i]
		if r.method != method {
			continue
		}
		m := r.rx.FindStringSubmatch(escapedPath)
		if m == nil {
			continue
		}
		params := map[string]string{}
		for k, name := range r.names {
			v, err := url.PathUnescape(m[k+1])
			if err != nil {
				v = m[k+1]
			}
			params[name] = v
		}
		return &r.route, params, true
	}
	return nil, nil, false
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

// Request checks one request: its method and path (escaped, as sent) name
// an operation, and its path, query and body are what that operation
// allows.
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
	c.mu.Lock()
	defer c.mu.Unlock()
	route, params, ok := c.find(method, path)
	if !ok {
		return fmt.Errorf("%s %s: %w", method, path, ErrNoOperation)
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

// Response checks the answer to a request: its status is one the
// operation describes, and its body has that status's schema.
func (c *Checker) Response(ctx context.Context, method, path, rawQuery string, status int, contentType string, body []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	route, params, ok := c.find(method, path)
	if !ok {
		return fmt.Errorf("%s %s: %w", method, path, ErrNoOperation)
	}
	u := apiServer + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequestWithContext(ctx, method, u, http.NoBody)
	if err != nil {
		return err
	}
	if route.Operation.Responses.Status(status) == nil && route.Operation.Responses.Default() == nil && status >= 400 && status < 500 {
		return c.clientError(method, path, route.Operation.OperationID, status, body)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, IncludeResponseStatus: true}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status,
		Header:                 http.Header{"Content-Type": {contentType}},
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	})
	if err != nil {
		return fmt.Errorf("%s %s (%s) answered %d: %w", method, path, route.Operation.OperationID, status, err)
	}
	return nil
}

// clientError checks a 4xx the operation does not describe. GitHub sends
// some on every route though the description lists them on few: 401 "Bad
// credentials", 403 and 429 for rate limits, 404, 422 "Validation Failed"
// (docs.github.com, "Troubleshooting the REST API" and "Rate limits for
// the REST API"). Such an answer must still be GitHub's error shape: the
// description's basic-error, or validation-error for a 422, with its
// message.
func (c *Checker) clientError(method, path, operationID string, status int, body []byte) error {
	name := "basic-error"
	if status == http.StatusUnprocessableEntity {
		name = "validation-error"
	}
	ref := c.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("%s is not in the vendored description", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s %s (%s) answered %d with a body that is not JSON: %w", method, path, operationID, status, err)
	}
	if m, _ := v.(map[string]any); m == nil || m["message"] == nil {
		return fmt.Errorf("%s %s (%s) answered %d without GitHub's error message", method, path, operationID, status)
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("%s %s (%s) answered %d not in %s's shape: %w", method, path, operationID, status, name, err)
	}
	return nil
}

// OperationID is the operationId of the operation method and the escaped
// path name ("" for none).
func (c *Checker) OperationID(method, escapedPath string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	route, _, ok := c.find(method, escapedPath)
	if !ok {
		return ""
	}
	return route.Operation.OperationID
}

// Webhook checks a webhook payload against x-webhooks[name] (such as
// "issue-comment-created").
func (c *Checker) Webhook(name string, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
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
