"""What every generator of scripts/ does with its outputs: write the files
whose text changed, or with --check only say which are stale."""
import os
import sys


def write_outputs(root, texts, check, tool):
    """texts: {path relative to root: text}.  Returns the exit status."""
    stale = []
    for path, text in texts.items():
        full = os.path.join(root, path)
        try:
            old = open(full).read()
        except OSError:
            old = None
        if old == text:
            continue
        if check:
            stale.append(path)
            continue
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full + ".tmp", "w") as f:
            f.write(text)
        os.replace(full + ".tmp", full)
        print(f"wrote {path}")
    if stale:
        print(f"{tool}: stale (run scripts/{tool}.py and commit): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0
