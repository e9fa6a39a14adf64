"""Writes the tree of files the git session of the real-program suite
works on: DIRS directories of FILES small text files each.

Usage: make-tree.py ROOT DIRS FILES"""
import os
import sys

root, dirs, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    os.makedirs(os.path.join(root, "d%02d" % d), exist_ok=True)
    for f in range(files):
        with open(os.path.join(root, "d%02d" % d, "f%03d.txt" % f), "w") as out:
            out.write(("file %d of directory %d\n" % (f, d)) * (1 + f % 7))
