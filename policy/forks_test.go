package policy

import "testing"

func TestIsFork(t *testing.T) {
	for _, tc := range []struct {
		head, base string
		want       bool
	}{
		{"octo/widgets", "octo/widgets", false},
		{"Octo/Widgets", "octo/widgets", false}, // GitHub names ignore case
		{"mallory/widgets", "octo/widgets", true},
		{"octo/widgets-fork", "octo/widgets", true},
		{"", "octo/widgets", true}, // a deleted fork
		{"", "", true},
		{"octo/widgets", "", true},
		{"octo/wıdgets", "octo/widgets", true}, // only ASCII case folds
	} {
		if got := IsFork(tc.head, tc.base); got != tc.want {
			t.Errorf("IsFork(%q, %q) = %v, want %v", tc.head, tc.base, got, tc.want)
		}
	}
}

func TestIsForkByID(t *testing.T) {
	for _, tc := range []struct {
		head, base int64
		want       bool
	}{
		{1, 1, false},
		{2, 1, true},
		{0, 1, false}, // unknown head: the worker decides
		{0, 0, false},
		{2, 0, true},
	} {
		if got := IsForkByID(tc.head, tc.base); got != tc.want {
			t.Errorf("IsForkByID(%d, %d) = %v, want %v", tc.head, tc.base, got, tc.want)
		}
	}
}

func TestAllForks(t *testing.T) {
	type pull struct{ head, base int64 }
	repos := func(p pull) (int64, int64) { return p.head, p.base }
	for _, tc := range []struct {
		name string
		prs  []pull
		want bool
	}{
		{"no pull requests", nil, false},
		{"one fork", []pull{{2, 1}}, true},
		{"two forks", []pull{{2, 1}, {3, 1}}, true},
		{"one same-repo", []pull{{1, 1}}, false},
		{"a fork and a same-repo", []pull{{2, 1}, {1, 1}}, false},
		{"a fork and an unknown head", []pull{{2, 1}, {0, 1}}, false},
		{"an unknown head", []pull{{0, 1}}, false},
	} {
		if got := AllForks(tc.prs, repos); got != tc.want {
			t.Errorf("%s: AllForks(%v) = %v, want %v", tc.name, tc.prs, got, tc.want)
		}
	}
}
