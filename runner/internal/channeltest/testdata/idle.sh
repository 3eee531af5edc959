#!/bin/sh
# A stand-in agent that changes nothing and answers.
printf 'Nothing to change: the code is right.\n' > "$INSPECT_ANSWER_FILE"
