#!/usr/bin/env python3
"""doc_snippet.py FILE LANG TEXT: prints the first fenced block of FILE
(README.md or docs/*.md) whose info string is LANG and whose body holds
TEXT, as docs_test.go's docBlocks reads it (the fence's indentation
removed). The journeys suites set an editor up from these words, so a
snippet that drifts from what works fails them. Exit 1 when none is found."""
import re
import sys

path, lang, text = sys.argv[1:4]
fence = re.compile(r"^(\s*)```\s*([A-Za-z0-9_+-]*)")
lines = open(path, encoding="utf-8").read().split("\n")
i = 0
while i < len(lines):
    m = fence.match(lines[i])
    if not m:
        i += 1
        continue
    body = []
    i += 1
    while i < len(lines) and not lines[i].strip().startswith("```"):
        l = lines[i]
        body.append(l[len(m.group(1)):] if l.startswith(m.group(1)) else l)
        i += 1
    i += 1
    block = "\n".join(body)
    if m.group(2) == lang and text in block:
        sys.stdout.write(block + "\n")
        sys.exit(0)
sys.stderr.write("%s: no ```%s block holding %r\n" % (path, lang, text))
sys.exit(1)
