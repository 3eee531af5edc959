package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestRepoReproduce(t *testing.T) {
	for _, c := range []struct {
		yaml          string
		labels        []string
		repair, wants bool
	}{
		{"", []string{"bug"}, true, false},
		{"reproduce: {when: never}\n", []string{"bug"}, true, false},
		{"reproduce: {when: always}\n", nil, false, true},
		{"reproduce: {when: bugs}\n", []string{"docs", "Bug"}, false, true},
		{"reproduce: {when: bugs}\n", []string{"defect"}, false, false},
		{"reproduce: {when: bugs}\n", nil, true, true},
		{"reproduce: {when: bugs, labels: [defect, regression]}\n", []string{"regression"}, false, true},
		{"reproduce: {when: bugs, labels: [defect]}\n", []string{"bug"}, false, false},
	} {
		r, err := ParseRepo([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := r.ReproduceFor(c.labels, c.repair); got != c.wants {
			t.Errorf("%q with labels %q (repair %v): %v, want %v", c.yaml, c.labels, c.repair, got, c.wants)
		}
	}
	for in, key := range map[string]string{
		"reproduce: {when: sometimes}\n":                 "reproduce.when: must be never, bugs or always",
		"reproduce: {when: always, labels: [bug]}\n":     "reproduce.labels: only applies with reproduce.when: bugs",
		"reproduce: {when: bugs, labels: []}\n":          "reproduce.labels: must list at least one label",
		"reproduce: {when: bugs, labels: [\" bug\"]}\n":  "reproduce.labels[0]:",
		"reproduce: {when: bugs, labels: [\"\"]}\n":      "reproduce.labels[0]: must not be empty",
		"reproduce: {when: bugs, label: [bug]}\n":        "label",
		"reproduce: {when: bugs, labels: [bug, \"\"]}\n": "reproduce.labels[1]",
	} {
		if _, err := ParseRepo([]byte(in)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v; want an error naming %q", in, err, key)
		}
	}
}

// Every key of a repository's reproduce: is in docs/configuration.md's
// table.
func TestRepoReproduceKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rt := reflect.TypeOf(RepoReproduce{})
	for i := range rt.NumField() {
		k := "reproduce." + rt.Field(i).Tag.Get("yaml")
		if !strings.Contains(string(doc), "| `"+k+"` |") {
			t.Errorf("repo key %s is not in docs/configuration.md's table", k)
		}
	}
}
