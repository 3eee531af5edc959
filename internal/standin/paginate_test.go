package standin

import (
	"net/http/httptest"
	"testing"
)

func TestPaginate(t *testing.T) {
	const path = "/api/v3/repos/acme/widgets/issues"
	for _, tc := range []struct {
		name   string
		query  string
		n      int
		lo, hi int
		link   string
	}{
		{"empty", "", 0, 0, 0, ""},
		{"one page, default size", "", 30, 0, 30, ""},
		{"first of two", "", 31, 0, 30,
			`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=30>; rel="next", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=30>; rel="last"`},
		{"middle page", "per_page=2&page=2", 5, 2, 4,
			`<http://stand.in/api/v3/repos/acme/widgets/issues?page=1&per_page=2>; rel="prev", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=3&per_page=2>; rel="next", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=3&per_page=2>; rel="last", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=1&per_page=2>; rel="first"`},
		{"last page", "per_page=2&page=3", 5, 4, 5,
			`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=2>; rel="prev", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=1&per_page=2>; rel="first"`},
		{"past the end is empty, prev is the last", "per_page=2&page=9", 5, 5, 5,
			`<http://stand.in/api/v3/repos/acme/widgets/issues?page=3&per_page=2>; rel="prev", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=1&per_page=2>; rel="first"`},
		{"per_page capped at 100", "per_page=500", 150, 0, 100,
			`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=100>; rel="next", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=100>; rel="last"`},
		{"bad values are the defaults", "per_page=x&page=-1", 3, 0, 3, ""},
		{"other query kept", "state=open&per_page=1", 2, 0, 1,
			`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=1&state=open>; rel="next", ` +
				`<http://stand.in/api/v3/repos/acme/widgets/issues?page=2&per_page=1&state=open>; rel="last"`},
	} {
		r := httptest.NewRequest("GET", "http://stand.in/repos/acme/widgets/issues?"+tc.query, nil)
		lo, hi, h := Paginate(r, path, tc.n)
		if lo != tc.lo || hi != tc.hi || h.Get("Link") != tc.link {
			t.Errorf("%s: Paginate = %d, %d, %q; want %d, %d, %q", tc.name, lo, hi, h.Get("Link"), tc.lo, tc.hi, tc.link)
		}
	}
}

func TestPageIsNeverNil(t *testing.T) {
	r := httptest.NewRequest("GET", "http://stand.in/x?page=3", nil)
	out, _ := Page[int](r, "/x", nil)
	if out == nil || len(out) != 0 {
		t.Errorf("Page of nothing = %#v, want an empty slice", out)
	}
	r = httptest.NewRequest("GET", "http://stand.in/x?per_page=2&page=2", nil)
	if out, _ := Page(r, "/x", []int{1, 2, 3}); len(out) != 1 || out[0] != 3 {
		t.Errorf("second page of three by two = %v, want [3]", out)
	}
}
