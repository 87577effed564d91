# SPDX-License-Identifier: Apache-2.0
"""test_docs_links.py — every relative link of the user-facing docs resolves.

A user has the repository, not a web site: README.md, docs/*.md and the
examples' READMEs link to each other and to files of the tree. This test reads
each of them, takes every Markdown link and image (`[text](target)`,
`![alt](target)`) outside code blocks and code spans, and asserts that

  - a relative target names a file or folder that exists (resolved from the
    linking file's folder);
  - a `#anchor` (alone, or after a .md target) names a heading of that file,
    spelled as GitHub spells heading anchors (lower case, punctuation dropped,
    spaces as hyphens, `-1`, `-2` ... for repeated headings).

Absolute URLs (http, https, mailto) are not followed: nothing leaves the
machine. A self-check feeds the checker a file with a broken link, a broken
anchor and good ones, so a checker that sees nothing fails.
"""

import glob
import os
import re
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(HERE, "..", ".."))

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def doc_files(root):
    """The Markdown files a user reads: README.md, docs/, the examples' READMEs."""
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    files += sorted(glob.glob(os.path.join(root, "examples", "*", "README.md")))
    files += sorted(glob.glob(os.path.join(root, "python", "README.md")))
    return [f for f in files if os.path.isfile(f)]


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield n, line.rstrip("\n")


def slug(heading):
    """GitHub's anchor for a heading text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in prose_lines(path):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        out.add(base if n == 0 else "%s-%d" % (base, n))
        seen[base] = n + 1
    return out


def links(path):
    """(line number, target) of every link and image outside code."""
    for n, line in prose_lines(path):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            yield n, target


def broken_links(path, cache=None):
    """Messages naming each link of PATH whose target or anchor is missing."""
    cache = {} if cache is None else cache
    problems = []
    for n, target in links(path):
        if EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        where = "%s:%d: %s" % (os.path.relpath(path, SOURCE), n, target)
        if not os.path.exists(dest):
            problems.append(where + " (no such file)")
            continue
        if anchor and dest.endswith(".md"):
            if dest not in cache:
                cache[dest] = anchors(dest)
            if anchor not in cache[dest]:
                problems.append(where + " (no heading with that anchor)")
    return problems


class DocsLinks(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        files = doc_files(SOURCE)
        self.assertIn(os.path.join(SOURCE, "README.md"), files)
        self.assertGreater(len(files), 5, "docs/*.md not found")
        cache, problems, count = {}, [], 0
        for path in files:
            count += sum(1 for _ in links(path))
            problems += broken_links(path, cache)
        self.assertGreater(count, 20, "too few links found: is the link pattern broken?")
        self.assertEqual(problems, [], "broken links:\n" + "\n".join(problems))

    def test_checker_sees_broken_links(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "other.md"), "w", encoding="utf-8") as f:
                f.write("# Other page\n\n## A `code` heading (v2)\n\n## Twice\n\n## Twice\n")
            page = os.path.join(d, "page.md")
            with open(page, "w", encoding="utf-8") as f:
                f.write("# Page\n\n"
                        "[ok](other.md) [ok](other.md#a-code-heading-v2) [ok](other.md#twice-1)\n"
                        "[ok](#page) ![ok](other.md) [web](https://example.invalid/x)\n"
                        "[gone](missing.md) and [bad anchor](other.md#nowhere)\n"
                        "`[in code](missing2.md)`\n"
                        "```\n[in a block](missing3.md)\n```\n")
            problems = broken_links(page)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("missing.md (no such file)", problems[0])
        self.assertIn("other.md#nowhere (no heading with that anchor)", problems[1])


if __name__ == "__main__":
    unittest.main()
