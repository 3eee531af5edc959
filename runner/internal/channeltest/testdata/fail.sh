#!/bin/sh
# A stand-in agent that edits a file, then fails.
echo "// half done" >> calc.go
echo "giving up" >&2
exit 4
