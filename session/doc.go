// Package session is the product's central noun, below every room that
// handles one: what a request to Inspect is (Trigger, CheckFailure,
// ConfigPush, with the Repo and Sender they name), the ways a session comes
// in (TriggerKind), what it works on (Target: an issue, a pull request,
// or a branch with no thread), and its life: State, Outcome and the table
// of named transitions the store checks every write against (state.go,
// decision 0045).
//
// It imports only the standard library and policy (a Trigger carries the
// parsed command). handlers converts webhook payloads into these types, the
// app stores and acts on them, app/render and app/web read them; none of
// them defines its own copy (docs/ARCHITECTURE.md, "Layers").
//
// # What is stored
//
// A Trigger, a CheckFailure and a ConfigPush are stored as JSON work
// payloads (the work table), and replicas of different versions share
// that table during a rolling upgrade (decisions 0004, 0015). So every
// field carries an explicit JSON tag equal to the encoding the types had
// when they lived in handlers (Go's field names; omitempty where it was),
// and a renamed Go field keeps its tag. testdata/stored holds rows captured
// from that code; stored_test.go decodes each and encodes it back byte for
// byte (decision 0044).
package session
