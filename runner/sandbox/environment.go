package sandbox

// The isolation flags of a command, alone or in a shared Environment.
var (
	// baseOptions are the isolation flags of a command on its own: every
	// namespace its own (--unshare-all), before its environment and mounts.
	baseOptions = append([]string{"--unshare-all"}, commonOptions...)
	// sharedOptions are those of a command in an Environment: bwrap runs
	// inside the holder's user, network and IPC namespaces (nsenter put it
	// there) and makes its own nested user namespace (for its mounts), PID,
	// UTS and cgroup namespaces, but not network or IPC, so every command
	// of the session shares one loopback and one set of System V IPC
	// objects. /tmp is still each command's own tmpfs.
	sharedOptions = append([]string{"--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"}, commonOptions...)
)

// commonOptions follow the namespaces in both kinds of command.
var commonOptions = []string{
	"--unshare-user", "--disable-userns", // --disable-userns needs --unshare-user spelt out
	"--die-with-parent",
	"--new-session",
	"--cap-drop", "ALL",
	"--hostname", Hostname,
	"--clearenv",
}

// holderOptions are the holder's: the namespaces the session's commands
// share (user, network, IPC) plus its own PID namespace (so its pidfd kill
// ends it whole), the host's toolchain read-only for the one program it
// runs, and nothing else: no /proc, no /dev, no workspace. Nested user
// namespaces stay allowed in it, since every command's bwrap makes one.
var holderOptions = []string{
	"--unshare-user", "--unshare-net", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
	"--die-with-parent",
	"--new-session",
	"--cap-drop", "ALL",
	"--hostname", Hostname,
	"--clearenv",
}

// holderArgv is what the holder runs: it says holderReady on its standard
// output, once its namespaces are complete, then only has to stay alive.
// sh and sleep are the host's, bound read-only with the host toolchain
// whatever root the session's commands get; the script is a constant.
var holderArgv = []string{"sh", "-c", "echo " + holderReady + " && exec sleep infinity"}

const holderReady = "inspect-holder-ready"
