package channel

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

func TestArtifactUploadIsCheckedAgainstTheSpecAndTypedByItsBytes(t *testing.T) {
	r := newRig(t, Options{})
	path := func(name string) string { return contract.PathArtifact + "?" + url.Values{"name": {name}}.Encode() }
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

	// A session whose repository names no artifacts takes none.
	if code, body := r.call(t, http.MethodPut, path("shot.png"), sessionAttempt, png); code != http.StatusForbidden || errorCode(t, body) != contract.ErrorNotAllowed {
		t.Errorf("no artifacts: %d %s", code, body)
	}

	a := r.st.attempts[sessionAttempt]
	a.Spec = mustJSON(t, contract.Spec{Artifacts: &contract.ArtifactSpec{Patterns: []string{"screenshots/*.png"}, MaxFileBytes: 64, MaxSessionBytes: 128}})
	r.st.attempts[sessionAttempt] = a
	for _, name := range []string{"other/shot.png", "screenshots/../.git/config", "screenshots/a.txt", ""} {
		if code, body := r.call(t, http.MethodPut, path(name), sessionAttempt, png); code != http.StatusBadRequest {
			t.Errorf("name %q: %d %s", name, code, body)
		}
	}
	if code, body := r.call(t, http.MethodPut, path("screenshots/big.png"), sessionAttempt, strings.Repeat("x", 65)); code != http.StatusRequestEntityTooLarge || errorCode(t, body) != contract.ErrorTooLarge {
		t.Errorf("over the per-file cap: %d %s", code, body)
	}
	if code, body := r.call(t, http.MethodPut, path("screenshots/home.png"), sessionAttempt, png); code != http.StatusNoContent {
		t.Fatalf("a good artifact: %d %s", code, body)
	}
	if len(r.st.artifacts) != 1 {
		t.Fatalf("stored %d artifacts", len(r.st.artifacts))
	}
	got := r.st.artifacts[0]
	if got.Name != "screenshots/home.png" || got.ContentType != "image/png" || got.Size != int64(len(png)) || got.SessionID != "s1" || len(got.SHA256) != 64 || !got.CreatedAt.Equal(epoch) {
		t.Errorf("stored %+v", got)
	}
}
