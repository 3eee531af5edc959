package fakegithub

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestMarkdownEffects(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want Effects
	}{
		"closing keyword": {"Fixes #3", Effects{Closes: []string{"#3"}, References: []string{"#3"}}},
		"closing keyword in another case, with a colon": {"CLOSED: #3.", Effects{Closes: []string{"#3"}, References: []string{"#3"}}},
		"every keyword": {"close #1 closes #2 closed #3 fix #4 fixes #5 fixed #6 resolve #7 resolves #8 resolved #9", Effects{
			Closes:     []string{"#1", "#2", "#3", "#4", "#5", "#6", "#7", "#8", "#9"},
			References: []string{"#1", "#2", "#3", "#4", "#5", "#6", "#7", "#8", "#9"}}},
		"another repository": {"Closes other/repo#9", Effects{Closes: []string{"other/repo#9"}, References: []string{"other/repo#9"}}},
		"a URL":              {"resolves https://github.com/acme/widgets/issues/4", Effects{Closes: []string{"acme/widgets#4"}, References: []string{"acme/widgets#4"}}},
		"a word ending in a keyword only references": {"Prefixes #3 and GH-4", Effects{References: []string{"#3", "#4"}}},
		"not references":                                       {"C#3x, &#64; and a#1", Effects{}},
		"in a quote it acts":                                   {"> Fixes #3 @octocat", Effects{Closes: []string{"#3"}, References: []string{"#3"}, Mentions: []string{"@octocat"}}},
		"in a code span":                                       {"say `Fixes #3 @octocat ![x](https://e/x.png) <img src=x>` then", Effects{}},
		"keyword outside, reference in code":                   {"Fixes `#3`", Effects{}},
		"an escaped backtick opens no span":                    {"\\`@octocat`", Effects{Mentions: []string{"@octocat"}}},
		"a span does not continue onto the next line":          {"`a\n@octocat`", Effects{Mentions: []string{"@octocat"}}},
		"a table cell ends a span":                             {"| `x | @octocat` |", Effects{Mentions: []string{"@octocat"}}},
		"an escaped pipe stays in the span":                    {"| `x \\| @octocat` |", Effects{}},
		"in a fenced block":                                    {"```\nFixes #3 @octocat ![x](https://e/x.png) <img src=x>\n```", Effects{}},
		"in a tilde fence":                                     {"~~~~ text\nFixes #3\n~~~~", Effects{}},
		"a shorter fence does not close":                       {"````\n```\nFixes #3\n````\n", Effects{}},
		"a fence closes, the text acts":                        {"```\n```\nFixes #3\n```", Effects{Closes: []string{"#3"}, References: []string{"#3"}}},
		"an unclosed fence runs to the end":                    {"```\nFixes #3", Effects{}},
		"a backtick fence with a backtick in its info is none": {"``` a`b\nFixes #3", Effects{Closes: []string{"#3"}, References: []string{"#3"}}},
		"a fence in a quote ends with it":                      {"> ```\n> @a\n@b", Effects{Mentions: []string{"@b"}}},
		"a quote marker inside a fence is code":                {"```\n> ```\n@a\n```", Effects{}},
		"a fence indented four spaces is none":                 {"    ```\n@a", Effects{Mentions: []string{"@a"}}},
		"mentions":                                             {"@octocat, @acme/reviewers; not a@b.com or @-x", Effects{Mentions: []string{"@octocat", "@acme/reviewers"}}},
		"images": {"![x](https://example.com/x.png) ![y][r] <img src=\"a.png\"> <IMG alt=z>\n\n[r]: https://example.com/r.png", Effects{
			Images: []string{"https://example.com/x.png", "https://example.com/r.png", "a.png", ""},
			HTML:   []string{"img", "img"}}},
		"html":        {"<img src=x> <details></details> <!-- c --> <!DOCTYPE x>", Effects{Images: []string{"x"}, HTML: []string{"img", "details", "/details", "!--", "!"}}},
		"not html":    {"a < b, <https://example.com> and <a@b.com>", Effects{}},
		"crlf fences": {"```\r\nFixes #3\r\n```\r\n@a", Effects{Mentions: []string{"@a"}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := MarkdownEffects(tc.body)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MarkdownEffects(%q)\n got %+v\nwant %+v", tc.body, got, tc.want)
			}
			if got.Acts() != tc.want.Acts() {
				t.Errorf("Acts() = %v", got.Acts())
			}
		})
	}
}

// Each body the App writes is judged as it is written: a pull request's
// closing keywords count while it targets the default branch, and a
// mention in an edited-away version of a comment was still notified.
func TestRenderedBodiesAreJudgedWhenWritten(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
	s.CommitFiles("acme", "widgets", "feature", map[string]string{"fix.go": "package fix\n"}, "fix")
	s.CreateBranch("acme", "widgets", "release", "main")
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "bug", User: "mara"})
	gh := appInstallClient(t, s, 1)
	pr, _, err := gh.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{
		Title: github.String("Fix"), Head: github.String("feature"), Base: github.String("main"), Body: github.String("Fixes #1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.PullRequests.Edit(ctx, "acme", "widgets", pr.GetNumber(), &github.PullRequest{Base: &github.PullRequestBranch{Ref: github.String("release")}}); err != nil {
		t.Fatal(err)
	}
	cm, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("cc @octocat")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Issues.EditComment(ctx, "acme", "widgets", cm.GetID(), &github.IssueComment{Body: github.String("`Fixes #1`")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: s.BranchSHA("acme", "widgets", "main"),
		Output: &github.CheckRunOutput{Title: github.String("@title is plain"), Summary: github.String("![i](https://e/i.png)")}}); err != nil {
		t.Fatal(err)
	}
	got := s.RenderedBodies("acme", "widgets")
	want := []struct {
		kind   string
		closes []string
		acts   bool
	}{
		{RenderedPull, []string{"#1"}, true},
		{RenderedPull, nil, true}, // retargeted: it references #1, closes nothing
		{RenderedComment, nil, true},
		{RenderedComment, nil, false},
		{RenderedCheckRun, nil, true},
	}
	if len(got) != len(want) {
		t.Fatalf("rendered = %+v", got)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || !reflect.DeepEqual(got[i].Closes, w.closes) || got[i].Acts() != w.acts {
			t.Errorf("rendered[%d] = %+v, want %s closing %q, acts %v", i, got[i], w.kind, w.closes, w.acts)
		}
	}
	if m := got[2].Mentions; len(m) != 1 || m[0] != "@octocat" {
		t.Errorf("the first version's mentions = %q", m)
	}
	if im := got[4].Images; len(im) != 1 || im[0] != "https://e/i.png" || len(got[4].Mentions) != 0 {
		t.Errorf("check run: %+v (the title is plain text)", got[4])
	}
}
