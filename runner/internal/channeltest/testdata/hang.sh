#!/bin/sh
# A stand-in agent that never ends, with a child that escapes into its own
# session; both carry $1 (a marker) in their command lines, so a test can
# look for leftovers in /proc.
setsid sh -c 'while :; do sleep 1; done' "$1-escaped" &
while :; do sleep 1; done
