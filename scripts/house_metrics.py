#!/usr/bin/env python3
"""The house's numbers, read from src/ as text (issue #36): the module graph, import circles
between files, functions over 80 / 120 / 150 lines, and `pub` items.

    python3 scripts/house_metrics.py [REPO]        # default: this checkout

The floors and the back-arrows against them are checked by tests/architecture.rs; this
script only counts. Method: comments and literals are blanked; the module tree is followed
from src/lib.rs along `mod NAME;` (with `#[path]`); a file imports another when it names a
path into that file's module (`crate::…`, `super::…`, `self::…`, a child module's name;
a `super` inside an inline module, `mod tests { … }`, climbs out of it first).
A circle is a strongly connected set of two or more files other than a folder's mod.rs
(which mostly re-exports the others). A function's length runs from
`fn` to its closing brace.
"""

import collections
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
SRC = os.path.join(ROOT, "src")


def strip(text):
    """Blank comments and string/char literals, keeping newlines (so line numbers hold)."""
    out, i, n = [], 0, len(text)
    blank = lambda s: re.sub(r"[^\n]", " ", s)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
        elif (m := re.match(r'b?r(#*)"', text[i:i + 40])) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif text[i] == "'" and (m := re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])):
            j = i + len(m.group(0))
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(blank(text[i:j]))
        i = j
    return "".join(out)


FILES, PUBLIC, CODE = {}, {}, {}


def walk(path, module, owns_dir, public):
    FILES[path], PUBLIC[path] = module, public
    raw = open(path, encoding="utf-8").read()
    code = CODE[path] = strip(raw)
    here = os.path.dirname(path)
    for m in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code):
        attrs, vis, name = m.group(1), m.group(2), m.group(3)
        pm = re.search(r'#\[path\s*=\s*"([^"]+)"\]', raw[m.start():m.end()])
        if pm:
            child = os.path.join(here, pm.group(1))
        else:
            base = here if owns_dir else os.path.join(here, os.path.basename(path)[:-3])
            child = os.path.join(base, name + ".rs")
            if not os.path.exists(child):
                child = os.path.join(base, name, "mod.rs")
        is_pub = vis is not None and vis.strip() == "pub" and "cfg(test)" not in attrs
        walk(child, module + [name], os.path.basename(child) == "mod.rs", public and is_pub)


walk(os.path.join(SRC, "lib.rs"), [], True, True)
MOD2FILE = {tuple(m): p for p, m in FILES.items()}
CHILDREN = collections.defaultdict(set)
for m in MOD2FILE:
    if m:
        CHILDREN[m[:-1]].add(m[-1])
TOP = {m[0] for m in MOD2FILE if m} | set(re.findall(r"\bmod\s+(\w+)\s*\{", CODE[os.path.join(SRC, "lib.rs")]))


def file_of(module):
    module = tuple(module)
    while module and module not in MOD2FILE:
        module = module[:-1]
    return MOD2FILE.get(module)


def inline_spans(code):
    """(start, end) of every inline `mod NAME { … }` body (a test module, mostly)."""
    spans = []
    for m in re.finditer(r"(?<![\w])mod\s+\w+\s*\{", code):
        depth, j = 0, m.end() - 1
        while j < len(code):
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        spans.append((m.end() - 1, j))
    return spans


def imports(path):
    """(target file or None, top-level module) for every path this file names."""
    module, code = FILES[path], CODE[path]
    spans = inline_spans(code)
    for m in re.finditer(r"(?<![\w:$])(crate|(?:super::)*super|self)((?:::\w+)*)(::\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\})?", code):
        head, segs = m.group(1), [s for s in m.group(2).split("::") if s]
        # `super` inside an inline module (`mod tests { use super::*; }`) first climbs out of
        # the inline modules around it, to this file's own module.
        inline = sum(1 for a, b in spans if a < m.start() < b)
        if head == "crate":
            base = []
        elif head == "self":
            base = list(module)
        else:
            k = max(head.count("super") - inline, 0)
            base = list(module[: max(len(module) - k, 0)])
        items = [segs]
        if m.group(4):
            items = [segs + [s.strip() for s in re.split(r"::", it.split("{")[0]) if s.strip() and s.strip() != "self"]
                     for it in re.split(r",(?![^{]*\})", m.group(4)) if it.strip()]
        for it in items:
            full = base + [re.sub(r"\s+as\s+\w+", "", s) for s in it]
            if full:
                yield file_of(full), full[0]
    for child in CHILDREN.get(tuple(module), ()):
        for m in re.finditer(r"(?<![\w:])" + child + r"::(\w+)", code):
            yield file_of(list(module) + [child, m.group(1)]), module[0] if module else child


def main():
    graph = collections.defaultdict(set)
    edges = collections.defaultdict(set)
    for path, module in FILES.items():
        if not module:
            continue
        for target, top in imports(path):
            if top in TOP and top != module[0]:
                graph[module[0]].add(top)
            # A folder's mod.rs mostly re-exports its files: an arrow through it would join
            # every file of the folder into one circle, so circles are counted between
            # the files that hold the code.
            if target and target != path and os.path.basename(target) not in ("mod.rs", "lib.rs") \
                    and os.path.basename(path) not in ("mod.rs", "lib.rs"):
                edges[path].add(target)
    print("module graph (importer -> imported):")
    for a in sorted(graph):
        print(f"  {a} -> {' '.join(sorted(graph[a]))}")

    # Tarjan's strongly connected components over the file graph.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    for v in FILES:
        if v not in index:
            visit(v)
    circles = sorted(sorted(os.path.relpath(f, ROOT) for f in s) for s in sccs if len(s) > 1)
    print(f"import circles between files: {len(circles)}")
    for c in circles:
        print("  " + " ".join(c))

    lengths = []
    for path in FILES:
        code = CODE[path]
        for m in re.finditer(r"(?<![\w])fn\s+(\w+)", code):
            j, depth = m.end(), 0
            while j < len(code):
                ch = code[j]
                if ch in "([<":
                    depth += 1
                elif ch in ")]>" and depth > 0 and not (ch == ">" and code[j - 1] == "-"):
                    depth -= 1
                elif ch == ";" and depth == 0:
                    j = -1
                    break
                elif ch == "{" and depth == 0:
                    break
                j += 1
            if j < 0 or j >= len(code):
                continue
            d, k = 0, j
            while k < len(code):
                d += {"{": 1, "}": -1}.get(code[k], 0)
                if d == 0:
                    break
                k += 1
            first = code.count("\n", 0, m.start()) + 1
            lengths.append((code.count("\n", 0, k) + 2 - first, os.path.relpath(path, ROOT), first, m.group(1)))
    lengths.sort(reverse=True)
    over = lambda n: sum(1 for x in lengths if x[0] > n)
    print(f"functions over 80 lines: {over(80)}, over 120: {over(120)}, over 150: {over(150)}")
    for n, f, line, name in lengths[:int(os.environ.get("TOP", "10"))]:
        print(f"  {n:4} {f}:{line} {name}")

    item = r"^\s*pub\s+(fn|async fn|unsafe fn|struct|enum|const|static|type|trait|mod|use)\b"
    all_pub = sum(len(re.findall(item, CODE[p], re.M)) for p in FILES)
    api = sum(len(re.findall(item, CODE[p], re.M)) for p in FILES if PUBLIC[p] and FILES[p])
    pub_mod = sum(len(re.findall(r"^\s*pub\s+mod\s+\w+", CODE[p], re.M)) for p in FILES)
    priv_mod = sum(len(re.findall(r"^\s*mod\s+\w+", CODE[p], re.M)) for p in FILES)
    print(f"pub items: {all_pub} ({api} in modules reachable from outside the crate); pub mod {pub_mod}, private mod {priv_mod}")


main()
