// Package contract owns every schema that crosses the line between the app
// and the supervisor (`inspect runner`): the session spec the app builds,
// the messages of the session channel, the evidence the supervisor writes,
// and the change manifest it sends back. It also owns the Redactor that
// scrubs credentials from everything either side writes.
//
// Why one package: the app and the supervisor are different processes, and
// on Buildkite they may be different builds of the `inspect` binary. Every
// byte that travels between them is described here and nowhere else, so a
// change to the contract is one reviewable diff, and both sides fail loudly
// on a document they do not understand instead of silently dropping a field.
//
// # Versions and strictness
//
// Every document carries a Version (SpecVersion, EvidenceVersion,
// ManifestVersion: "inspect.session-spec/v9" and so on); channel messages
// are versioned by their "/v1/" paths (ChannelVersion), and a claim states
// the spec version the supervisor reads, so a mismatch stops an attempt at
// its first request. Readers accept exactly the version they were built
// for: the Decode functions check the version first (so a mismatch is
// reported as one, not as an unknown field), then decode with unknown
// fields refused, within a size cap, and then run Validate. Change a document's fields, or the
// meaning of one, and you bump its version constant and the golden files in
// testdata/. Later issues (Buildkite, snapshot images, real agents) extend
// these schemas; the places meant to grow are marked "Extended by".
//
// # Faults
//
// Validate reports every fault at once as a *ValidationError whose
// FieldErrors name the JSON path of the field ("repo.clone_url",
// "files[3].path") and the fault. No fault message ever echoes a value that
// looks like a secret.
//
// # The channel's one server
//
// ChannelServer serves the session channel for every far end (the app,
// `inspect run`, the supervisor's tests) over a ChannelBackend that
// answers only domain questions; ChannelRefusals is the table of its
// checks, their order and their statuses (decision 0046).
//
// # What this package must not do
//
// It does no I/O beyond reading the io.Reader or serving the HTTP request
// it is handed, holds no policy
// (which paths are protected, which models are allowed: that is policy/ and
// config/), and imports only the standard library, so the app, the
// supervisor and the small forwarder inside the sandbox can all link it
// without pulling anything else in.
package contract
