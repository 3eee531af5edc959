package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

func TestRunnerFlagsAndEnvironment(t *testing.T) {
	for _, k := range []string{contract.EnvChannelURL, contract.EnvChannelSocket, contract.EnvAttemptID, contract.EnvClaimCode, contract.EnvSessionID} {
		t.Setenv(k, "")
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"runner", "attempt-1"}, 2, "the attempt comes from the environment"},
		{[]string{"runner", "--sandbox-uid", "1000"}, 2, "both --sandbox-uid and --sandbox-gid"},
		{[]string{"runner", "--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"runner"}, 1, contract.EnvChannelURL + " (or " + contract.EnvChannelSocket + ") is not set"},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q", tc.args, code, tc.code, errOut.String(), tc.want)
		}
	}
}
