package handlers

import (
	"context"

	json "github.com/goccy/go-json"
)

// AppAuthorization handles `github_app_authorization`: GitHub sends action
// "revoked" when a user revokes their authorization of the App, and every
// token of theirs stops working. The dashboard forgets the tokens it
// sealed for them, and their sign-ins with them.
type AppAuthorization struct {
	Forget UserForgetter
}

// UserForgetter forgets a signed-in user by their GitHub user id.
type UserForgetter interface {
	ForgetUser(ctx context.Context, userID int64) error
}

type appAuthorizationPayload struct {
	Action string `json:"action"`
	Sender struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
	} `json:"sender"`
}

// Handles implements githubapp.EventHandler.
func (h *AppAuthorization) Handles() []string { return []string{"github_app_authorization"} }

// Handle implements githubapp.EventHandler.
func (h *AppAuthorization) Handle(ctx context.Context, _, _ string, payload []byte) error {
	var ev appAuthorizationPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	if ev.Action != "revoked" {
		return nil // the only action GitHub documents
	}
	if ev.Sender.ID == 0 {
		return payloadErrorf("github_app_authorization is missing its sender")
	}
	if err := h.Forget.ForgetUser(ctx, ev.Sender.ID); err != nil {
		return &StoreError{Err: err}
	}
	return nil
}
