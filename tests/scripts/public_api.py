"""The functions and data the public headers declare, read through the C
preprocessor so that macros, conditionals and comments are out of the way.

Each header in include/timeline/ is preprocessed as the library sees it
(TIMELINE_BUILDING_LIBRARY defined, so TL_API expands to the visibility
attribute); only the text that comes from that header itself is kept, cut
into top-level declarations and definitions.
"""

import os
import re
import subprocess

ATTRIBUTE = re.compile(r"__attribute__\s*\(\(")
IDENT = re.compile(r"[A-Za-z_]\w*")
EXPORTED = re.compile(r"visibility\s*\(\s*\"default\"\s*\)")


class Declaration:
    def __init__(self, name, kind, exported, inline, header):
        self.name = name  # the declared identifier
        self.kind = kind  # "function", "data" or "type" (a typedef)
        self.exported = exported  # declared TL_API
        self.inline = inline  # a static inline definition
        self.header = header  # file name, e.g. "timeline.h"

    def __repr__(self):
        return "%s %s (%s)" % (self.kind, self.name, self.header)


def public_headers(include_dir):
    folder = os.path.join(include_dir, "timeline")
    return sorted(
        os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".h")
    )


def own_text(cc, include_dir, header):
    """The preprocessed text of header, without what it includes."""
    out = subprocess.run(
        [cc, "-E", "-std=gnu11", "-DTIMELINE_BUILDING_LIBRARY", "-I", include_dir, header],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    target = os.path.realpath(header)
    keep, current = [], None
    for line in out.splitlines():
        marker = re.match(r'#\s*(?:line\s+)?\d+\s+"([^"]*)"', line)
        if marker:
            current = marker.group(1)
            continue
        if line.startswith("#"):
            continue  # pragmas
        if current and not current.startswith("<") and os.path.realpath(current) == target:
            keep.append(line)
    return "\n".join(keep)


def skip_literal(text, i):
    """Index after the string or character literal that starts at i."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def matching(text, i, open_c, close_c):
    """Index of the bracket closing the one at i."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced %s" % open_c)


def strip_attributes(text):
    """(text without __attribute__((...)), the attributes' text)."""
    attrs = []
    while True:
        m = ATTRIBUTE.search(text)
        if not m:
            return text, " ".join(attrs)
        end = matching(text, m.end() - 2, "(", ")")
        attrs.append(text[m.start() : end + 1])
        text = text[: m.start()] + " " + text[end + 1 :]


def without_braces(text):
    """text with every {...} group removed (struct and enum bodies)."""
    while "{" in text:
        start = text.index("{")
        text = text[:start] + " " + text[matching(text, start, "{", "}") + 1 :]
    return text


def top_level_items(text):
    """Yields (head, is_definition) for each top-level declaration."""
    start = i = 0
    paren = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif c == "{" and paren == 0:
            head = text[start:i]
            plain, _ = strip_attributes(head)
            close = matching(text, i, "{", "}")
            if plain.strip().endswith(")") and not plain.lstrip().startswith("typedef"):
                yield head, True  # a function definition
                start = i = close + 1
                continue
            i = close  # a struct, union or enum body: part of this item
        elif c == ";" and paren == 0:
            yield text[start:i], False
            start = i + 1
        i += 1


def declared_name(decl):
    """(name, kind) of a declaration without its attributes, or None."""
    words = decl.split()
    if not words:
        return None
    decl = without_braces(decl)
    if words[0] == "typedef":
        named = declared_name(decl.replace("typedef", " ", 1))
        return (named[0], "type") if named else None
    first_paren = decl.find("(")
    if first_paren < 0:
        names = IDENT.findall(re.split(r"[\[=]", decl)[0])
        if len(names) < 2 or names[-2] in ("struct", "union", "enum"):
            return None  # a struct, union or enum declared, no object
        return names[-1], "data"
    after = decl[first_paren + 1 :].lstrip()
    if after.startswith("*"):  # a pointer declarator: (*name)(...)
        m = IDENT.match(after[1:].lstrip())
        return (m.group(0), "data") if m else None
    names = IDENT.findall(decl[:first_paren])
    return (names[-1], "function") if names else None


def declarations(cc, include_dir):
    """Every function, object and typedef the public headers declare."""
    found = []
    for header in public_headers(include_dir):
        for head, is_definition in top_level_items(own_text(cc, include_dir, header)):
            plain, attrs = strip_attributes(head)
            named = declared_name(plain)
            if not named:
                continue
            name, kind = named
            found.append(
                Declaration(
                    name,
                    kind,
                    bool(EXPORTED.search(attrs)),
                    is_definition and re.search(r"\binline\b", plain) is not None,
                    os.path.basename(header),
                )
            )
    return found
