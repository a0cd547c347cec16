#!/bin/sh
# The commits since the last tag (all of them when there is no tag), one a line.
last=$(git describe --tags --abbrev=0 2>/dev/null)
if [ -n "$last" ]; then git log --oneline "$last"..HEAD; else git log --oneline; fi
