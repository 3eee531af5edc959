package store_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
)

// TestStoredTriggerInfoRoundTrips reads sessions.trigger_info values the
// code before the session package wrote (session/testdata/stored), and
// writes each back byte for byte: a replica of either version reads what
// the other stored.
func TestStoredTriggerInfoRoundTrips(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "session", "testdata", "stored", "trigger_info.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, stored, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("a line without a tab: %q", sc.Text())
		}
		rows++
		t.Run(name, func(t *testing.T) {
			var ti store.TriggerInfo
			if stored != "" {
				dec := json.NewDecoder(strings.NewReader(stored))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&ti); err != nil {
					t.Fatalf("decoding %s: %v", stored, err)
				}
			}
			if got := (store.Session{TriggerInfo: stored}.Info()); !equalInfo(got, ti) {
				t.Errorf("Info() = %+v, the strict decoding %+v", got, ti)
			}
			if got := ti.Encode(); got != stored {
				t.Errorf("encoded back differently:\n got %s\nwant %s", got, stored)
			}
		})
	}
	if rows != 9 {
		t.Fatalf("read %d rows, want the 9 captured", rows)
	}
}

func equalInfo(a, b store.TriggerInfo) bool {
	ja, _ := json.Marshal(a) // plain structs always marshal
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestReviewInfoThread: the thread replies go to is the stored thread_id,
// whether the comment opened it or replied in it.
func TestReviewInfoThread(t *testing.T) {
	for stored, want := range map[string]int64{
		`{"review":{"comment_id":29724692,"thread_id":29724690,"path":"README.md","line":3}}`: 29724690,
		`{"review":{"comment_id":5,"thread_id":5,"path":"a.go","line":1}}`:                    5,
	} {
		r := store.Session{TriggerInfo: stored}.Info().Review
		if r == nil || r.ThreadID() != want {
			t.Errorf("%s: thread %v, want %d", stored, r, want)
		}
	}
}

// TestTriggerInfoKeepsWhatItCanRead: a review field of a type this version
// does not expect (a newer replica's) loses that field only, as a plain
// struct's decoding did before ReviewInfo had its own; the label, checks
// and branch around it are kept.
func TestTriggerInfoKeepsWhatItCanRead(t *testing.T) {
	ti := store.Session{TriggerInfo: `{"label":"l","review":{"comment_id":"7","thread_id":5,"path":"a.go","line":1},"checks":["c"],"branch":"b"}`}.Info()
	if ti.Label != "l" || len(ti.Checks) != 1 || ti.Branch != "b" {
		t.Errorf("the fields around the review were lost: %+v", ti)
	}
	if ti.Review == nil || ti.Review.Path != "a.go" || ti.Review.Line != 1 || ti.Review.CommentID != 0 {
		t.Errorf("the review's readable fields: %+v", ti.Review)
	}
	if got := (store.Session{TriggerInfo: `{"review":{"comment_id":1,"line":[}`}.Info()); got.Review != nil || got.Label != "" {
		t.Errorf("malformed JSON read as %+v", got)
	}
}
