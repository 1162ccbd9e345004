#!/usr/bin/env python3
"""Checks that the code blocks of one section of a Markdown document are the code of a source
file that the build compiles, so the documentation cannot drift from it. The first BLOCK_COUNT
```cpp blocks of the section (all by default) must each appear in the source as a contiguous
run of lines (leading whitespace ignored).

    doc_snippet_test.py DOC.md "## Heading" SOURCE.cpp [BLOCK_COUNT]
"""
import re
import sys


def main():
    doc, heading, source = sys.argv[1], sys.argv[2], sys.argv[3]
    count = int(sys.argv[4]) if len(sys.argv) > 4 else None
    text = "\n" + open(doc, encoding="utf-8").read()  # a heading on the first line matches too
    start = text.find("\n" + heading + "\n")
    if start < 0:
        sys.exit(f"FAIL no section {heading!r} in {doc}")
    level = heading.split()[0]
    end = text.find("\n" + level + " ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    blocks = re.findall(r"```cpp\n(.*?)```", section, re.S)
    src = [line.strip() for line in open(source, encoding="utf-8").read().splitlines()]
    passed = failed = 0
    checked = 0
    for i, block in enumerate(blocks):
        lines = [line.strip() for line in block.strip("\n").splitlines()]
        if count is not None and checked >= count:
            break
        checked += 1
        found = any(src[k:k + len(lines)] == lines for k in range(len(src) - len(lines) + 1))
        if found:
            passed += 1
            print(f"ok   block {i + 1} of {heading!r} is in {source}")
        else:
            failed += 1
            print(f"FAIL block {i + 1} of {heading!r} is not in {source}:\n{block}")
    if checked == 0:
        failed += 1
        print("FAIL no code block checked")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
