package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// CheckFiles reads every file the config refers to that `inspect serve`
// will need: the App's key, the Buildkite token (executor.kind buildkite),
// the dashboard's client secret and key (web.public_url set), each model
// provider's api_key_path and each registry's token_path. A
// missing, unreadable or empty one is a start-up error naming its key, all
// of them at once, instead of a failure at the first session that needs it.
func (c Server) CheckFiles() error {
	faults := c.fileFaults()
	if len(faults) == 0 {
		return nil
	}
	return errors.New("files the config names:\n  " + strings.Join(faults, "\n  "))
}

// fileFaults is CheckFiles's list, one fault a line, each naming its key.
func (c Server) fileFaults() []string {
	var faults []string
	check := func(key, path string) {
		if path == "" {
			return
		}
		b, err := os.ReadFile(path)
		switch {
		case err != nil:
			faults = append(faults, fmt.Sprintf("%s: %v", key, err))
		case strings.TrimSpace(string(b)) == "":
			faults = append(faults, fmt.Sprintf("%s: %s is empty", key, path))
		}
	}
	check("github.private_key_path", c.GitHub.PrivateKeyPath)
	if c.Executor.Kind == "buildkite" {
		check("buildkite.api_token_path", c.Buildkite.APITokenPath)
	}
	if c.WebEnabled() {
		check("web.client_secret_path", c.Web.ClientSecretPath)
		if _, err := c.WebKey(); c.Web.KeyPath != "" && err != nil {
			faults = append(faults, err.Error())
		}
	}
	for i, k := range c.Provenance.Keys {
		check(fmt.Sprintf("provenance.keys[%d].private_key_path", i), k.PrivateKeyPath)
		check(fmt.Sprintf("provenance.keys[%d].public_key_path", i), k.PublicKeyPath)
	}
	for _, name := range sortedKeys(c.Agents.Providers) {
		check("agents.providers."+name+".api_key_path", c.Agents.Providers[name].KeyPath)
	}
	for _, name := range sortedKeys(c.Egress.Registries) {
		check("egress.registries."+name+".token_path", c.Egress.Registries[name].TokenPath)
	}
	return faults
}
