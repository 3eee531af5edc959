package appsetup

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// App is GitHub's answer to the conversion: the App it registered, with
// its credentials. Its secrets never go into logs or errors.
type App struct {
	ID            int64  `json:"id"`
	Slug          string `json:"slug"`
	Name          string `json:"name"`
	HTMLURL       string `json:"html_url"`
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	WebhookSecret string `json:"webhook_secret"`
	// PEM is the private key; JSON carries its line breaks as \n, which
	// decoding turns back into a PEM block.
	PEM   string `json:"pem"`
	Owner struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"owner"`
}

// String never shows a secret.
func (a App) String() string {
	return fmt.Sprintf("{ID:%d Slug:%s Owner:%s}", a.ID, a.Slug, a.Owner.Login)
}

// maxConversionBytes bounds GitHub's answer: an App's JSON and a 2048-bit
// key are a few KB.
const maxConversionBytes = 1 << 20

// Convert exchanges a manifest code for the App through POST
// {apiURL}app-manifests/{code}/conversions. The code is good once, for an
// hour; the call needs no authentication.
func Convert(ctx context.Context, client *http.Client, apiURL, code string) (App, error) {
	endpoint := strings.TrimSuffix(apiURL, "/") + "/app-manifests/" + url.PathEscape(code) + "/conversions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return App{}, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := client.Do(req)
	if err != nil {
		return App{}, fmt.Errorf("exchanging the manifest code: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConversionBytes+1))
	if err != nil {
		return App{}, fmt.Errorf("reading GitHub's answer to the conversion: %w", err)
	}
	if len(body) > maxConversionBytes {
		return App{}, fmt.Errorf("GitHub's answer to the conversion is over %d bytes", maxConversionBytes)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return App{}, fmt.Errorf("GitHub does not know the code (404): codes are good once and for an hour; run inspect setup again")
	case resp.StatusCode != http.StatusCreated:
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e) // the message is a courtesy; the status says enough
		return App{}, fmt.Errorf("GitHub answered the conversion with %s: %s", resp.Status, e.Message)
	}
	var app App
	if err := json.Unmarshal(body, &app); err != nil {
		return App{}, fmt.Errorf("decoding GitHub's answer to the conversion: %w", err)
	}
	if err := app.check(); err != nil {
		return App{}, err
	}
	return app, nil
}

func (a App) check() error {
	switch {
	case a.ID <= 0:
		return fmt.Errorf("GitHub's answer to the conversion has no App id")
	case a.Slug == "":
		return fmt.Errorf("GitHub's answer to the conversion has no slug")
	case strings.TrimSpace(a.WebhookSecret) == "":
		return fmt.Errorf("GitHub's answer to the conversion has no webhook secret")
	case a.ClientID == "" || strings.TrimSpace(a.ClientSecret) == "":
		return fmt.Errorf("GitHub's answer to the conversion has no OAuth client id or secret")
	}
	if block, _ := pem.Decode([]byte(a.PEM)); block == nil {
		return fmt.Errorf("the pem of GitHub's answer to the conversion is not a PEM-encoded key")
	}
	return nil
}
