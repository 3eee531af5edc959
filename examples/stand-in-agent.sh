#!/bin/sh
# STAND-IN AGENT, for `make demo` and the tests. It is not an AI: it makes
# the one fix the sample repository needs, so the whole loop can be seen
# without a model. A real agent (Codex CLI, OpenCode, Claude Code, or any
# program) is configured the same way, in the repository's
# .github/inspect.yml:
#
#   agent:
#     preset: command
#     command: ["my-agent", "--non-interactive"]
#
# Inspect runs it inside the sandbox, in /workspace (the checkout), with the
# prompt file as its last argument (also in $INSPECT_PROMPT_FILE). Whatever it
# writes to $INSPECT_ANSWER_FILE is posted as its answer. It has no network
# and no credentials.
set -eu
test -s "$1" || { echo "stand-in agent: no prompt at $1" >&2; exit 2; }
echo "stand-in agent: read $(wc -l < "$1") lines of prompt"
sed -i 's/return a + b + 1/return a + b/' calc.go
printf 'Fixed `Add`: it added one too many. `go test ./...` should pass now.\n' > "$INSPECT_ANSWER_FILE"
