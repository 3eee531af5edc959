package supervisor

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// timedConversations is fakeConversations that notes when Resume was
// called: the moment the message is handed to the agent's CLI.
type timedConversations struct {
	fakeConversations
	mu      sync.Mutex
	resumed time.Time
}

func (f *timedConversations) Open(ctx context.Context, a contract.Agent, p AgentPaths, at ConversationPlace) (Conversation, error) {
	return timedConversation{f}, nil
}

type timedConversation struct{ f *timedConversations }

func (c timedConversation) Resume(ctx context.Context, msg string) (Invocation, error) {
	c.f.mu.Lock()
	c.f.resumed = time.Now()
	c.f.mu.Unlock()
	return fakeConversation{&c.f.fakeConversations}.Resume(ctx, msg)
}

// BenchmarkSteerToModel is the time from a message being stored for a
// running session (the channel stand-in's AddTurn, where the app's
// admit_turn writes it) to the agent's CLI being resumed with it: the
// supervisor's long poll, the interrupt (SIGTERM, the run's end) and the
// resume. With the real CLIs (the conversation primitive) the model's next
// request follows the CLI's own start; BENCHMARKS.md has the figure.
func BenchmarkSteerToModel(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		ch := channeltest.New(b)
		sha := ch.SeedGoRepo()
		stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
		id := "sess-bench-steer-" + strconv.Itoa(i)
		spec := ch.Spec(id, id+"-a1", sha, []string{"sh", "-c", `exec sh agent/hang.sh "inspect-bench-$1"`, "sh", stamp}, command("lint", time.Minute, "true"))
		spec.Steer = &contract.Steer{Mode: contract.SteerInterrupt}
		code := ch.AddAttempt(spec)
		conv := &timedConversations{}
		cfg := benchConfig(b, ch, spec, code)
		cfg.Conversations = conv
		asks := ch.TurnAsks(spec.AttemptID)
		done := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), cfg)
			done <- err
		}()
		waitForProcessB(b, "inspect-bench-"+stamp)
		select {
		case <-asks:
		case <-time.After(time.Minute):
			b.Fatal("the supervisor never asked for turns")
		}
		start := time.Now()
		ch.AddTurn(spec.AttemptID, "bob", "go on differently", false)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		conv.mu.Lock()
		total += conv.resumed.Sub(start)
		conv.mu.Unlock()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/steer")
}

func benchConfig(b *testing.B, ch *channeltest.Server, spec contract.Spec, code string) Config {
	return Config{
		ChannelURL: ch.URL(), SessionID: spec.SessionID, AttemptID: spec.AttemptID, ClaimCode: code,
		WorkDir: channeltest.WorkDir(b), SandboxPath: goBinDir + ":" + DefaultSandboxPath, RunnerVersion: "bench",
		RetryDelay: -1, FinishTimeout: time.Minute, RequestTimeout: 30 * time.Second, ForwarderBinary: forwarder,
		Limits: serverDefaultLimits, StopGrace: 2 * time.Second,
	}
}

func waitForProcessB(b *testing.B, marker string) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(time.Minute)
	for len(channeltest.ProcessesWith(marker)) == 0 {
		select {
		case <-tick.C:
		case <-timeout:
			b.Fatalf("no process with %s started", marker)
		}
	}
}
