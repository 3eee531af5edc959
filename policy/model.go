package policy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ModelRoute is one request the model proxy relays to a provider: a method
// and a path relative to the provider's base_url.
type ModelRoute struct {
	Method string
	Path   string
}

func (r ModelRoute) String() string { return r.Method + " " + r.Path }

// modelRoutes are the only requests a provider of each kind is sent, each
// relative to its base_url (an OpenAI base already ends in /v1; an
// Anthropic one is the host). They are what the agents' CLIs call; the
// server's key opens nothing else (files, batches, fine-tuning, admin).
var modelRoutes = map[string][]ModelRoute{
	"openai": {
		{http.MethodPost, "responses"},
		{http.MethodPost, "chat/completions"},
	},
	"anthropic": {
		{http.MethodPost, "v1/messages"},
		{http.MethodPost, "v1/messages/count_tokens"},
	},
}

// ModelRoutes lists the routes a provider of kind is sent.
func ModelRoutes(kind string) []ModelRoute { return append([]ModelRoute(nil), modelRoutes[kind]...) }

// ModelDecision is the answer to one model request: allowed, with the
// route it is and the path's segments to build the upstream URL from, or
// refused with why (which names the route asked for and those served).
type ModelDecision struct {
	Allowed  bool
	Route    ModelRoute
	Segments []string
	Why      string
}

// DecideModelRequest decides one request to a provider of kind by its
// method and its path below the provider's prefix, already decoded once
// (ModelPathSegments does that from an escaped path). Only the kind's
// named routes pass; TRACE, CONNECT and every other method or path is
// refused.
func DecideModelRequest(kind, method string, segments []string) ModelDecision {
	asked := method + " " + strings.Join(segments, "/")
	if err := cleanModelSegments(segments); err != nil {
		return ModelDecision{Why: fmt.Sprintf("the route %q is refused: %v", asked, err)}
	}
	routes, ok := modelRoutes[kind]
	if !ok {
		return ModelDecision{Why: "the server configures no model provider of kind " + kind}
	}
	path := strings.Join(segments, "/")
	for _, r := range routes {
		if r.Method == method && r.Path == path {
			return ModelDecision{Allowed: true, Route: r, Segments: segments}
		}
	}
	served := make([]string, len(routes))
	for i, r := range routes {
		served[i] = r.String()
	}
	return ModelDecision{Why: fmt.Sprintf("the route %q is not one the model proxy serves for a provider of kind %s (it serves %s)",
		asked, kind, strings.Join(served, ", "))}
}

// ModelPathSegments decodes an escaped path (as it arrived on the wire,
// after /v1/providers/{name}/) exactly once, segment by segment, so an
// escaped "/" stays inside its segment, where cleanModelSegments refuses
// it. A %2e%2e arrives as "..", a %252e%252e as "%2e%2e": both refused.
func ModelPathSegments(escaped string) ([]string, error) {
	raw := strings.Split(escaped, "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		d, err := url.PathUnescape(s)
		if err != nil {
			return nil, fmt.Errorf("the path %q is not a valid escaped path", escaped)
		}
		segs[i] = d
	}
	return segs, nil
}

// cleanModelSegments refuses what could change a path's meaning on its way
// to the provider: no segments, an empty, "." or ".." segment, a "%" left
// after the one decoding, and any character outside letters, digits, "-",
// "_" and ".".
func cleanModelSegments(segs []string) error {
	if len(segs) == 0 {
		return fmt.Errorf("no path")
	}
	for _, s := range segs {
		switch s {
		case "":
			return fmt.Errorf("an empty segment")
		case ".", "..":
			return fmt.Errorf("a %q segment", s)
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '%' {
				return fmt.Errorf("a %% left after decoding once (encoded twice?)")
			}
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return fmt.Errorf("the character %q", c)
			}
		}
	}
	return nil
}
