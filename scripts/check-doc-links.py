#!/usr/bin/env python3
"""Checks the relative links of Spindle's documentation.

Reads README.md, ARCHITECTURE.md and every docs/**/*.md and checks that
each relative link (inline links, images, reference definitions, HTML
href/src) names a file or folder that exists, and that each #anchor
matches a heading of the target Markdown file, by the slug GitHub and
mdBook give it. Pages of the user guide (docs/, built by mdBook with
docs/ as its source) may not link outside docs/: the built book does not
carry those files. Every docs/**/*.md page must be listed in
docs/SUMMARY.md. External links (http, https, mailto, ...) are not
checked.

Prints file:line for every broken link and exits 1 if there is one.

    python3 scripts/check-doc-links.py
"""

import os
import re
import sys
import unicodedata
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
SKIP_DIRS = {"book", "node_modules", ".git"}

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*(<[^>]*>|\S+)")
HTML_ATTR = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']""", re.I)
HTML_ID = re.compile(r"""<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*["']([^"']*)["']""", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def doc_files():
    """README.md, ARCHITECTURE.md and docs/**/*.md, as absolute paths."""
    files = [os.path.join(ROOT, name) for name in ("README.md", "ARCHITECTURE.md")]
    files = [f for f in files if os.path.isfile(f)]
    for folder, dirs, names in os.walk(DOCS):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".md"))
    return files


def strip_code_spans(line):
    """The line with the contents of `code spans` blanked out."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            close = line.find("`" * run, i + run)
            while close != -1 and close + run < len(line) and line[close + run] == "`":
                close = line.find("`" * run, close + run + 1)
            if close == -1:
                out.append(line[i : i + run])
                i += run
                continue
            out.append(" " * (close + run - i))
            i = close + run
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, line
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not line.strip()[len(m.group(1)):].strip():
            fence = None


def heading_text(raw):
    """The text a heading renders to: no code marks, link targets or emphasis."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*|(?<!\w)_|_(?!\w))", "", text)
    return text.strip()


def github_slug(text):
    """GitHub's anchor for a heading's text."""
    slug = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat[0] == "M":
            slug.append("-" if ch == " " else ch)
    return "".join(slug)


def mdbook_slug(text):
    """mdBook's anchor for a heading's text (normalize_id)."""
    slug = []
    for ch in text:
        if ch.isalnum() or ch in "_-":
            slug.append(ch.lower() if ch.isascii() else ch)
        elif ch.isspace():
            slug.append("-")
    return "".join(slug)


def unique(slugs):
    """Numbered as both renderers number repeated headings: x, x-1, x-2."""
    seen, out = {}, []
    for slug in slugs:
        if slug in seen:
            seen[slug] += 1
            out.append(f"{slug}-{seen[slug]}")
        else:
            seen[slug] = 0
            out.append(slug)
    return out


ANCHOR_CACHE = {}


def anchors(path):
    """(GitHub anchors, mdBook anchors) of a Markdown file."""
    if path in ANCHOR_CACHE:
        return ANCHOR_CACHE[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    headings, explicit, previous = [], set(), ""
    for _, line in prose_lines(text):
        explicit.update(HTML_ID.findall(line))
        m = ATX.match(line)
        if m:
            headings.append(heading_text(m.group(2) or ""))
            previous = ""
            continue
        if SETEXT.match(line) and previous.strip() and not previous.lstrip().startswith(("|", "-", "*", ">")):
            headings.append(heading_text(previous))
            previous = ""
            continue
        previous = line
    result = (
        set(unique([github_slug(h) for h in headings])) | explicit,
        set(unique([mdbook_slug(h) for h in headings])) | explicit,
    )
    ANCHOR_CACHE[path] = result
    return result


def link_targets(line):
    """The targets of the links on one line (code spans already blanked)."""
    targets = []
    i = line.find("](")
    while i != -1:
        j, depth, start = i + 2, 0, i + 2
        while j < len(line):
            if line[j] == "(":
                depth += 1
            elif line[j] == ")":
                if depth == 0:
                    break
                depth -= 1
            j += 1
        inner = line[start:j].strip()
        if inner.startswith("<") and ">" in inner:
            targets.append(inner[1 : inner.index(">")])
        elif inner:
            targets.append(inner.split()[0])
        i = line.find("](", j)
    m = REF_DEF.match(line)
    if m:
        targets.append(m.group(1).strip("<>"))
    targets.extend(HTML_ATTR.findall(line))
    return targets


def rel(path):
    return os.path.relpath(path, ROOT)


def check_link(source, target):
    """None if the link resolves, else why not."""
    if not target or SCHEME.match(target) or target.startswith("//"):
        return None
    path_part, _, anchor = target.partition("#")
    path_part = unquote(path_part.split("?")[0])
    if path_part.startswith("/"):
        return "absolute path; links must be relative"
    dest = os.path.normpath(os.path.join(os.path.dirname(source), path_part)) if path_part else source
    if not os.path.exists(dest):
        return f"no such file: {rel(dest)}"
    in_book = source.startswith(DOCS + os.sep)
    if in_book and not (dest == DOCS or dest.startswith(DOCS + os.sep)):
        return f"{rel(dest)} is outside docs/, so the built book cannot link to it (name it in `code` instead)"
    if anchor and dest.endswith(".md") and os.path.isfile(dest):
        anchor = unquote(anchor)
        gh, mdbook = anchors(dest)
        if anchor not in gh:
            return f"no heading with anchor #{anchor} in {rel(dest)}"
        if in_book and anchor not in mdbook:
            return f"#{anchor} is GitHub's anchor in {rel(dest)} but mdBook's differs"
    return None


def check_summary(problems):
    """Every docs/**/*.md page is listed in docs/SUMMARY.md."""
    summary = os.path.join(DOCS, "SUMMARY.md")
    if not os.path.isfile(summary):
        return
    listed = set()
    with open(summary, encoding="utf-8") as f:
        for _, line in prose_lines(f.read()):
            for target in link_targets(strip_code_spans(line)):
                if not SCHEME.match(target):
                    path = unquote(target.partition("#")[0])
                    listed.add(os.path.normpath(os.path.join(DOCS, path)))
    for path in doc_files():
        if path.startswith(DOCS + os.sep) and path != summary and path not in listed:
            problems.append(f"{rel(summary)}:1: {rel(path)} is not in the book's table of contents")


def main():
    problems, links = [], 0
    for path in doc_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for number, line in prose_lines(text):
            for target in link_targets(strip_code_spans(line)):
                if SCHEME.match(target) or target.startswith("//"):
                    continue
                links += 1
                why = check_link(path, target)
                if why:
                    problems.append(f"{rel(path)}:{number}: ({target}) {why}")
    check_summary(problems)
    for problem in problems:
        print(problem)
    files = len(doc_files())
    if problems:
        print(f"check-doc-links: {len(problems)} broken of {links} relative links in {files} files", file=sys.stderr)
        return 1
    print(f"check-doc-links: {links} relative links in {files} files, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
