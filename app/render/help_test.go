package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/policy"
)

func TestHelpText(t *testing.T) {
	for _, w := range []string{"/inspect", "/fix-it", "/ab"} {
		h := HelpText(w)
		if p := policy.Parse(h, w); p.Kind != policy.Ignore {
			t.Errorf("HelpText(%q) parses as %v", w, p.Kind)
		}
		for _, s := range []string{w + " <instructions>", w + " help", w + " status", w + " cancel", w + " retry"} {
			if !strings.Contains(h, "`"+s+"`") {
				t.Errorf("HelpText(%q) lacks %q", w, s)
			}
		}
		if n := strings.Count(h, "Example: `"+w); n != 5 {
			t.Errorf("HelpText(%q) has %d examples, want 5", w, n)
		}
	}
}

// The replies to comments policy.Parse answers with the help, word for
// word: the short reason, then the help.
func TestHelpReplyWords(t *testing.T) {
	const word = "/inspect"
	opt := func(s string) string { return "Unknown option `" + s + "`: Inspect commands take no options.\n\n" }
	cases := []struct {
		name, body, prefix string
	}{
		{"help", "/inspect help", ""},
		{"help with words", "/inspect help me fix the tests", ""},
		{"help capitalised", "/inspect Help", ""},
		{"help then lines", "/inspect help\nwhat can you do?", ""},
		{"help then command", "/inspect help\n/inspect fix it", ""},
		{"bare word then command", "/inspect\n/inspect fix it", ""},
		{"retry with args", "/inspect retry now", "`/inspect retry` takes no arguments.\n\n"},
		{"status with args", "/inspect status please", "`/inspect status` takes no arguments.\n\n"},
		{"cancel with args", "/inspect cancel it", "`/inspect cancel` takes no arguments.\n\n"},
		{"retry upper case with args", "/inspect RETRY now", "`/inspect retry` takes no arguments.\n\n"},
		{"long option", "/inspect --x", opt("--x")},
		{"short option", "/inspect -v fix it", opt("-v")},
		{"em dash", "/inspect —x", opt("—x")},
		{"en dash", "/inspect –x", opt("–x")},
		{"minus sign", "/inspect −x", opt("−x")},
		{"option with value", "/inspect --force=yes", opt("--force=yes")},
		{"backticks stripped", "/inspect --e`vil`", opt("--evil")},
		{"hidden characters stripped", "/inspect --\u202ex\u0007", opt("--x")},
		{"truncated", "/inspect -" + strings.Repeat("a", 100), opt("-" + strings.Repeat("a", 38) + "…")},
		{"exactly 40 runes", "/inspect -" + strings.Repeat("é", 39), opt("-" + strings.Repeat("é", 39))},
		{"non-ascii letter", "/inspect -é", opt("-é")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := policy.Parse(c.body, word)
			if p.Kind != policy.Reply {
				t.Fatalf("Parse(%q) = %+v, want a reply", c.body, p)
			}
			if got, want := HelpReply(p.Problem, word), c.prefix+HelpText(word); got != want {
				t.Errorf("HelpReply = %q\nwant %q", got, want)
			}
		})
	}
}

// The reason's words before the help keep untrusted text in its code span
// and never make the reply a command, for any option text.
func TestHelpReplyOptionIsInert(t *testing.T) {
	for _, o := range []string{"--x`\n/inspect run`", "-\u202e\u200b" + strings.Repeat("`", 50), "-a\n\n/inspect fix", "--<b>@all</b>"} {
		got := HelpReply(policy.ParseProblem{Reason: policy.ParseUnknownOption, Option: o}, "/inspect")
		first, rest, _ := strings.Cut(got, "\n\n")
		if strings.Count(first, "`") != 2 || strings.ContainsAny(first, "\n") || strings.IndexFunc(first, policy.IsHidden) >= 0 {
			t.Errorf("option %q: the reason is %q", o, first)
		}
		if rest != HelpText("/inspect") {
			t.Errorf("option %q: the help is not whole after the reason", o)
		}
		if p := policy.Parse(got, "/inspect"); p.Kind != policy.Ignore {
			t.Errorf("option %q: the reply parses as %v", o, p.Kind)
		}
	}
}

func FuzzHelpReply(f *testing.F) {
	for _, s := range []string{"/inspect", "/inspect help", "/inspect retry now", "/inspect --x", "/inspect -" + strings.Repeat("`", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p := policy.Parse(body, "/inspect")
		if p.Kind != policy.Reply {
			return
		}
		if got := HelpReply(p.Problem, "/inspect"); !strings.HasSuffix(got, HelpText("/inspect")) {
			t.Fatalf("the reply to %q does not end with the help: %q", body, got)
		}
	})
}
