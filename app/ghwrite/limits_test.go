package ghwrite

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
)

func TestCutRunesKeepsTheLimitAndSaysSo(t *testing.T) {
	tests := []struct {
		name, in string
		limit    int
		want     string
	}{
		{name: "short enough", in: "héllo", limit: 5, want: "héllo"},
		{name: "cut with the note", in: strings.Repeat("é", 100), limit: 60, want: strings.Repeat("é", 60-utf8.RuneCountInString(cutNote)) + cutNote},
		{name: "too small for the note", in: "abcdef", limit: 3, want: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CutRunes(tt.in, tt.limit)
			if got != tt.want {
				t.Errorf("CutRunes = %q, want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > tt.limit {
				t.Errorf("%d characters, over the limit %d", n, tt.limit)
			}
		})
	}
}

func TestCutBytesCutsOnACharacterBoundary(t *testing.T) {
	in := strings.Repeat("€", 40) // 3 bytes each
	got := CutBytes(in, 100)
	if len(got) > 100 || !utf8.ValidString(got) || !strings.HasSuffix(got, cutNote) {
		t.Errorf("CutBytes = %q (%d bytes), want valid UTF-8 of at most 100 bytes ending in the note", got, len(got))
	}
	if CutBytes("abc", 3) != "abc" {
		t.Error("a text within the limit must be left alone")
	}
}

func TestCheckRunWritesFitGitHubsLimits(t *testing.T) {
	long := strings.Repeat("x", MaxCheckOutput+10)
	out := &github.CheckRunOutput{Title: github.String("t"), Summary: github.String(long), Text: github.String(long)}
	checks := &fakeChecks{}
	if err := ConcludeCheckRun(context.Background(), checks, "o", "r", 1, github.UpdateCheckRunOptions{Name: "Inspect", Output: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCheckRun(context.Background(), checks, "o", "r", github.CreateCheckRunOptions{Name: "Inspect", HeadSHA: "abc", Output: out}, false); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*github.CheckRunOutput{checks.updated[0].Output, checks.created[0].Output} {
		for _, s := range []string{o.GetSummary(), o.GetText()} {
			if utf8.RuneCountInString(s) != MaxCheckOutput || !strings.HasSuffix(s, cutNote) {
				t.Errorf("output of %d characters, want %d ending in the note", utf8.RuneCountInString(s), MaxCheckOutput)
			}
		}
	}
	if out.GetSummary() != long {
		t.Error("the caller's output was changed")
	}
}

func TestAnnotationsGoInBatchesCutToTheirLimits(t *testing.T) {
	var anns []*github.CheckRunAnnotation
	for range 120 {
		anns = append(anns, &github.CheckRunAnnotation{
			Path: github.String("a_test.go"), Title: github.String(strings.Repeat("T", 300)),
			Message: github.String(strings.Repeat("m", 70000)), RawDetails: github.String(strings.Repeat("r", 70000)),
		})
	}
	checks := &fakeChecks{}
	if err := AnnotateCheckRun(context.Background(), checks, "o", "r", 1, "Inspect", "t", "s", anns); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, u := range checks.updated {
		sizes = append(sizes, len(u.Output.Annotations))
		for _, a := range u.Output.Annotations {
			if utf8.RuneCountInString(a.GetTitle()) > MaxAnnotationTitle || len(a.GetMessage()) > MaxAnnotationBytes || len(a.GetRawDetails()) > MaxAnnotationBytes {
				t.Fatalf("annotation over the limits: title %d, message %d, raw_details %d", utf8.RuneCountInString(a.GetTitle()), len(a.GetMessage()), len(a.GetRawDetails()))
			}
		}
	}
	if len(sizes) != 3 || sizes[0] != 50 || sizes[1] != 50 || sizes[2] != 20 {
		t.Errorf("batches %v, want [50 50 20]", sizes)
	}
	if len(anns[0].GetTitle()) != 300 {
		t.Error("the caller's annotations were changed")
	}
}

func TestCommentsFitWithTheirMarkerWhole(t *testing.T) {
	issues := &fakeIssues{}
	th := Thread{Issues: issues, Owner: "o", Repo: "r", Number: 3, Bot: "inspect[bot]"}
	marker := "<!-- inspect:session s1 -->"
	if _, err := th.PostOnce(context.Background(), marker, strings.Repeat("b", MaxCommentBody), false); err != nil {
		t.Fatal(err)
	}
	if err := th.Edit(context.Background(), 9, marker, strings.Repeat("b", MaxCommentBody+5)); err != nil {
		t.Fatal(err)
	}
	for _, sent := range []string{strings.TrimPrefix(issues.created[0], "#3 "), strings.TrimPrefix(issues.edited[0], "9 ")} {
		if n := utf8.RuneCountInString(sent); n != MaxCommentBody || !strings.HasSuffix(sent, cutNote+"\n"+marker) {
			t.Errorf("comment of %d characters ending %q, want %d ending in the note and the marker", n, sent[len(sent)-60:], MaxCommentBody)
		}
	}
}
