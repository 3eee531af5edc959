package supervisor

import (
	"maps"
	"slices"
	"testing"
)

func TestAccountsFileNamesTheSandboxUID(t *testing.T) {
	entry := func(n string) string { return n + ":x:65534:65534:Inspect sandbox:/tmp:/bin/sh" }
	cases := map[string]struct{ image, want string }{
		"none": {"", "inspect:x:65534:65534:Inspect sandbox:/tmp:/bin/sh\n"},
		"the image's name is kept": {"root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			"root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534:Inspect sandbox:/tmp:/bin/sh\n"},
		"the name taken by another id": {"inspect:x:1000:1000::/home/inspect:/bin/sh\n",
			"inspect:x:65534:65534:Inspect sandbox:/tmp:/bin/sh\n"},
		"odd lines kept": {"# comment\nroot:x:0:0::/:/bin/sh", "# comment\nroot:x:0:0::/:/bin/sh\ninspect:x:65534:65534:Inspect sandbox:/tmp:/bin/sh\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(accountsFile([]byte(tc.image), 65534, entry)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestImageEnvIsUnderTheReposEnv(t *testing.T) {
	repo := map[string]string{"PATH": "/repo/bin", "A": "repo"}
	got := withImageEnv([]string{"PATH=/image/bin", "A=image", "B=image", "HOME=/root", "INSPECT_X=1", "malformed"}, repo)
	want := map[string]string{"PATH": "/repo/bin", "A": "repo", "B": "image"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(repo) != 2 {
		t.Errorf("the repo's env was changed: %v", repo)
	}
	env := sandboxEnv("/default", withImageEnv([]string{"PATH=/image/bin"}, nil))
	if !slices.Contains(env, "PATH=/image/bin") {
		t.Errorf("the image's PATH is not in effect: %v", env)
	}
}
