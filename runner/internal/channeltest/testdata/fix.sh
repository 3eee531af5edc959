#!/bin/sh
# A stand-in agent (the repository's own argv, run in the sandbox): it fixes
# the failing test and makes one change of every kind the manifest carries.
# $1 is the prompt file.
set -eu
test -s "$1" || { echo "no prompt at $1" >&2; exit 9; }
test "$INSPECT_PROMPT_FILE" = "$1"

sed -i 's/return a + b + 1/return a + b/' calc.go   # modified
rm obsolete.txt                                     # deleted
mkdir -p docs && printf 'Add adds.\n' > docs/add.md # added, in a new directory
chmod +x tools/run.sh                               # mode 100644 -> 100755
ln -s calc.go calc.link                             # a symlink: 120000, its target as content

# Output that looks like a GitHub token is redacted from evidence by format.
echo "found ghs_abcdefghijklmnopqrstuvwxyz0123456789 in the logs"
echo "fixed Add" >&2
printf 'Fixed Add: it added one too many.\n' > "$INSPECT_ANSWER_FILE"
