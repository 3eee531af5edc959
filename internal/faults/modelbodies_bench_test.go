package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/fakemodel"
)

// modelBodiesAgent is the command agent of BenchmarkModelProxyBodiesPeakRSS:
// its prompt (the comment) says what to send through the model proxy. It
// writes each body under the sandbox's /tmp, never the workspace, so that
// the session's change stays empty.
const modelBodiesAgent = `set -u
base=http://127.0.0.1:8931/v1/providers/scripted/chat/completions
size=0
grep -q 'send oversized bodies' "$1" && size=31457280
grep -q 'send capped bodies' "$1" && size=7340032
if [ "$size" = 0 ]; then echo quiet > "$INSPECT_ANSWER_FILE"; exit 0; fi
body=$(mktemp)
{ printf '{"model":"scripted-1","messages":[{"role":"user","content":"'; head -c $((size - 64)) /dev/zero | tr '\0' a; printf '"}]}'; } > "$body"
codes=$(mktemp -d)
for i in 1 2 3 4 5 6 7 8; do
  if [ $((i % 2)) = 0 ]; then
    curl -sS -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$body" "$base" > "$codes/$i" &
  else
    curl -sS -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' --data-binary @"$body" "$base" > "$codes/$i" &
  fi
done
wait
echo "codes: $(cat "$codes"/* | sort | uniq -c | tr -s ' \n' ' ')" > "$INSPECT_ANSWER_FILE"
`

// modelBodiesAnswers is what each phase's agent must have been answered:
// every oversized body refused (413), and capped ones served (200).
var modelBodiesAnswers = map[string]string{"quiet": "quiet", "oversized": " 8 413", "capped": " 200"}

// modelBodiesRSSBoundMiB is the most the peak RSS of `inspect serve` may
// grow while one session sends eight concurrent 30 MiB model request
// bodies (BENCHMARKS.md): each is refused at the body cap
// (agents.max_request_bytes, 8 MiB), the declared ones before a byte is
// read, the chunked ones after at most the cap.
const modelBodiesRSSBoundMiB = 96

// BenchmarkModelProxyBodiesPeakRSS measures how much one real `inspect
// serve` process's peak resident set grows during one session on the local
// executor whose agent sends model requests through the model proxy, side
// by side: "quiet" sends none (the session's own cost), "oversized" sends
// eight 30 MiB bodies at once (half with a declared length, half chunked),
// "capped" eight of 7 MiB, under the cap, which the scripted model answers
// (four at a time: agents.max_requests_in_flight). The peak is the
// kernel's high-water mark (VmHWM), reset before each session. It fails
// when "oversized" grows past modelBodiesRSSBoundMiB.
func BenchmarkModelProxyBodiesPeakRSS(b *testing.B) {
	model := fakemodel.New()
	b.Cleanup(model.Close)
	const key = "sk-proj-faults-bench-0123456789abcdefghij"
	model.RequireKey(key)
	keyFile := filepath.Join(b.TempDir(), "model-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	f := newFleet(b, fleetOptions{agent: []string{"sh", "agent.sh"}, set: map[string]any{
		"agents.providers": map[string]any{"scripted": map[string]any{"kind": "openai", "base_url": model.URL() + "/v1", "api_key_path": keyFile}},
		"agents.models":    []map[string]any{{"name": "scripted-1", "provider": "scripted", "presets": []string{"command"}}},
	}})
	f.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            modelBodiesAgent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\nverify: []\n",
	}, "an agent that sends big bodies")
	r := f.start()
	sessions := 0
	for _, phase := range []string{"quiet", "oversized", "capped"} {
		b.Run(phase, func(b *testing.B) {
			var worst int64
			for range b.N {
				if phase == "capped" {
					for range 8 {
						model.Script(fakemodel.Turn{Message: "ok", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 1}})
					}
				}
				resetPeakRSS(b, r.PID())
				before := procStatusKiB(b, r.PID(), "VmRSS")
				sessions++
				n := 2000 + sessions
				f.issue(n)
				if d := f.gh.Deliver(context.Background(), "issue_comment", f.comment(n, "/inspect send "+phase+" bodies")); d.StatusCode != 200 {
					b.Fatalf("delivery: %d %s", d.StatusCode, d.Status)
				}
				for _, s := range f.waitDone(sessions, 3*time.Minute) {
					if s.Number == n && s.Outcome != "no_change" {
						b.Fatalf("session %s ended %s/%s\n%s", s.ID, s.Outcome, s.Reason, f.logTails())
					}
				}
				worst = max(worst, procStatusKiB(b, r.PID(), "VmHWM")-before)
				var answer string
				if err := f.db.QueryRow(`SELECT detail FROM sessions WHERE number = $1`, n).Scan(&answer); err != nil {
					b.Fatal(err)
				}
				if want := modelBodiesAnswers[phase]; !strings.Contains(answer, want) {
					b.Fatalf("the %s agent's answer lacks %q: %s", phase, want, answer)
				}
			}
			mib := float64(worst) / 1024
			b.ReportMetric(mib, "peak-RSS-growth-MiB")
			if phase == "oversized" && mib > modelBodiesRSSBoundMiB {
				b.Errorf("eight 30 MiB bodies grew the peak RSS by %.1f MiB, past the bound of %d MiB", mib, modelBodiesRSSBoundMiB)
			}
		})
	}
}

// resetPeakRSS sets the process's high-water mark (VmHWM) to its current
// resident set (proc(5), clear_refs value 5).
func resetPeakRSS(b *testing.B, pid int) {
	b.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak RSS: %v", err)
	}
}

// procStatusKiB reads one "Name:   N kB" line of /proc/PID/status.
func procStatusKiB(b *testing.B, pid int, name string) int64 {
	b.Helper()
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("%s: %q", name, rest)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status (%v)", name, pid, sc.Err())
	return 0
}
