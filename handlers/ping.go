package handlers

import "context"

// Ping handles `ping`, which GitHub sends when the webhook is set up. It
// only needs a 200, which proves the URL and secret are right.
type Ping struct{}

// Handles implements githubapp.EventHandler.
func (Ping) Handles() []string { return []string{"ping"} }

// Handle implements githubapp.EventHandler.
func (Ping) Handle(context.Context, string, string, []byte) error { return nil }
