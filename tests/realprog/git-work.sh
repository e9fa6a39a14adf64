#!/bin/sh
# The git session of the real-program suite (tests/integration/real_programs.rs),
# run inside a directory of files (make-tree.py): a repository made, every
# file added and committed, some changed, and the status and the log shown.
# Names and dates are fixed, so the commit's hash is the same on every run.
set -e
export GIT_AUTHOR_NAME=suite GIT_AUTHOR_EMAIL=suite@example.invalid
export GIT_COMMITTER_NAME=suite GIT_COMMITTER_EMAIL=suite@example.invalid
export GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'
export GIT_CONFIG_NOSYSTEM=1 HOME="$PWD/.home"
git init -q -b main .
git add -A
git commit -q -m 'all the files'
for f in d00/f000.txt d07/f042.txt d13/f099.txt; do echo changed >> "$f"; done
rm d02/f005.txt
echo new > d05/new.txt
git status --porcelain
git log --format='%H %T %s'
git diff --stat | tail -1
