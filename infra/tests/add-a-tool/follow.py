"""Follows docs/adding-a-tool.md in a scratch tree, mechanically, so that the guide is what
drives it (run by infra/tests/add-a-tool.sh, which builds and tests the result).

The guide builds two example tools: an in-process one (`award_value`) and one with its own
function (`search_knowledge_base` -> kb-retrieve). Each `<!-- file: PATH -->` block is an
excerpt of PATH that shows the example in place. This program adds a second tool of each
kind, named after the example plus a word (`award_value_copy`, `kb-retrieve-copy`, ...), by
doing what each excerpt shows once more for the new name:

- an excerpt of a file named after the example (shared/agent-tools/src/award_value.rs) and every
  path of the Checklist with a placeholder (functions/<name>/, events/<name>/): a renamed
  copy of the example's file or directory;
- any other excerpt: in the item around it (the Rust item, the template resource, the TOML
  table, the table row), every piece that names the example (a line, a statement, an item,
  a bullet of a prompt) is repeated right after itself for the new name, and an inline list
  (`tools = [...]`, `for bin in ...`) gets the new name next to the example's;

Then it compares the files it changed with the files the Checklist names and fails, naming
them, when the Checklist misses one. `names` prints the new names and the guide's sh blocks
rewritten for them, for the shell script to run.

Usage: follow.py apply GUIDE TREE   follow the guide, then `check`
       follow.py check GUIDE TREE   only compare the changed files with the Checklist
       follow.py commands GUIDE     the new names and the guide's sh blocks, as JSON
       follow.py unnamed GUIDE TREE PATH...   those of the paths the Checklist does not name
"""

import json
import re
import subprocess
import sys
from pathlib import Path

WORD = "copy"


class GuideError(Exception):
    pass


# ---------------------------------------------------------------------------------------
# The guide


def blocks(text):
    """(path or None, language, body, heading) of every fenced block."""
    out, lines, heading, i = [], text.split("\n"), "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        fence = re.match(r"^\s*(`{3,})(\S*)", line)
        if fence:
            prev = lines[i - 1].strip() if i else ""
            m = re.fullmatch(r"<!--\s*file:\s*(\S+)\s*-->", prev)
            body, i = [], i + 1
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            out.append((m.group(1) if m else None, fence.group(2), "\n".join(body) + "\n", heading))
        i += 1
    return out


def section(text, title):
    """The text under the heading `title`, up to the next heading of the same level."""
    m = re.search(rf"^(#+) {re.escape(title)}\s*$", text, re.M)
    if not m:
        raise GuideError(f"the guide has no section '{title}'")
    level = len(m.group(1))
    end = re.search(rf"^#{{1,{level}}} ", text[m.end():], re.M)
    return text[m.end(): m.end() + end.start()] if end else text[m.end():]


def snake_words(name):
    return [w for w in re.split(r"[-_/]", name) if w]


def forms(name):
    """Every spelling of a name in the code: snake, kebab, UPPER and Camel case."""
    words = snake_words(name)
    return {
        "_".join(words): "snake",
        "-".join(words): "kebab",
        "_".join(words).upper(): "upper",
        "".join(w.capitalize() for w in words): "camel",
    }


def renamed(token, kind):
    if kind == "snake":
        return f"{token}_{WORD}"
    if kind == "kebab" or kind == "path":
        return f"{token}-{WORD}"
    if kind == "upper":
        return f"{token}_{WORD.upper()}"
    return token + WORD.capitalize()


class Examples:
    """The guide's two example tools and every name of theirs the code spells, each with its
    new spelling."""

    def __init__(self, guide, tree):
        self.guide = guide
        all_blocks = blocks(guide)
        named = [m for _, _, b, _ in all_blocks for m in re.findall(r'ToolName::new\("(\w+)"\)', b)]
        if not named:
            raise GuideError("no excerpt names the example tool (`name: ToolName::new(\"x\")`)")
        self.tool = named[0]
        own = section(guide, "A tool with its own Lambda function")
        m = re.search(r"`(\w+)` is the\s+example here", own)
        if not m:
            raise GuideError("the function section does not say which tool is its example")
        self.function_tool = m.group(1)
        crates = re.findall(r"functions/([\w-]+)/Cargo\.toml", own)
        if not crates:
            raise GuideError("the function section links no functions/<name>/Cargo.toml")
        self.function = crates[0]
        route = re.search(r"Path: /internal/(\S+)", own)
        module = re.search(r"shared/agent-tools/src/(\w+)\.rs", own)
        if not (route and module):
            raise GuideError("the function section lacks the /internal route or the tool's file")
        self.module = module.group(1)
        self.tokens = {}
        for name in (self.tool, self.function_tool, self.function):
            self.tokens.update(forms(name))
        self.tokens[self.module] = "snake"
        self.tokens[route.group(1)] = "path"
        # Public types of the examples' own agent files are renamed with them.
        for path in (f"shared/agent-tools/src/{self.tool}.rs", f"shared/agent-tools/src/{self.module}.rs"):
            source = (tree / path).read_text() if (tree / path).exists() else ""
            for t in re.findall(r"^pub (?:struct|enum) (\w+)", source, re.M):
                if not any(token in t for token in self.tokens):
                    self.tokens[t] = "camel"
        alternatives = "|".join(re.escape(t) for t in sorted(self.tokens, key=len, reverse=True))
        self.pattern = re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![a-z0-9])|"
                                  rf"(?<![A-Za-z0-9_])({alternatives})(?=[A-Z])")

    def new(self, name):
        return renamed(name, self.tokens.get(name, "snake"))

    def rename(self, text):
        def one(m):
            token = m.group(1) or m.group(2)
            kind = self.tokens[token]
            if m.group(2) and kind != "camel":
                return token
            return renamed(token, kind)
        return self.pattern.sub(one, text)

    def names(self, line):
        return bool(self.pattern.search(line))


def checklist_paths(guide, ex):
    """The files and directories the Checklist names, placeholders filled in for each
    example: (path as named, example's path, new path)."""
    text = section(guide, "Checklist")
    fill = [
        {"<tool>": ex.tool, "<name>": ex.function},
        {"<tool>": ex.module, "<name>": ex.function},
    ]
    out = []
    for raw in re.findall(r"`([^`\s]+)`", text):
        is_path = "/" in raw or re.fullmatch(r"[\w.-]+\.(rs|toml|yaml|yml|md|ts|sh|py|json|lock)", raw)
        if not is_path or raw.startswith("/"):
            continue
        for f in fill:
            example = raw
            for k, v in f.items():
                example = example.replace(k, v)
            out.append((raw, example.rstrip("/"), ex.rename(example).rstrip("/")))
    return out


# ---------------------------------------------------------------------------------------
# Editing a file the way an excerpt shows


def indent(line):
    return len(line) - len(line.lstrip(" "))


def depth_change(line):
    code = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    code = re.sub(r"//.*", "", code)
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def occurrences(lines, excerpt):
    """Where the excerpt stands in the file, as docs-check reads a quote: its lines in
    order, blank lines and indentation aside. Every place, from each line that matches the
    excerpt's first up to the next such line: [(start, end)]."""
    want = [w.strip() for w in excerpt.split("\n") if w.strip()]
    have = [line.strip() for line in lines]
    starts = [i for i, line in enumerate(have) if line == want[0]]
    spans = []
    for k, s in enumerate(starts):
        limit = starts[k + 1] if k + 1 < len(starts) else len(have)
        i, j = s, 0
        while i < limit and j < len(want):
            if have[i] == want[j]:
                j += 1
            i += 1
        if j == len(want):
            spans.append((s, i))
    return spans


def rust_item(lines, start, end):
    """The top-level item around lines[start:end] (a `use`/`mod` line: its paragraph)."""
    top = start
    while top > 0 and (indent(lines[top]) > 0 or not lines[top].strip()
                       or lines[top].lstrip().startswith(("}", ")", "]"))):
        top -= 1
    if re.match(r"(pub )?(use|mod) ", lines[top]):
        first, last = top, top
        while first > 0 and lines[first - 1].strip():
            first -= 1
        while last + 1 < len(lines) and lines[last + 1].strip():
            last += 1
        return first, max(last + 1, end)
    depth, i = 0, top
    while i < len(lines):
        depth += depth_change(lines[i])
        i += 1
        if depth <= 0 and i >= end and (lines[i - 1].rstrip().endswith(("}", ";", ","))):
            break
    return top, max(i, end)


def rust_unit(lines, i, lo, hi):
    """The statement or item that starts on line i: through its closing bracket, with its
    doc comments and attributes."""
    start = i
    while start - 1 >= lo:
        prev = lines[start - 1].strip()
        if prev.startswith(("///", "#[")):
            start -= 1
        elif prev == ")]":
            j = start - 1
            while j > lo and not lines[j].strip().startswith("#["):
                j -= 1
            start = j
        else:
            break
    depth, j = 0, i
    while j < hi:
        depth += depth_change(lines[j])
        j += 1
        if depth <= 0:
            break
    if depth_change(lines[i]) < 0:
        j = i + 1
    return start, j


def enclosing_call(lines, i, lo):
    """Line i, or the start of the call it is an argument of (`check!(` over several lines):
    a list element, match arm or field stays on its own."""
    while True:
        acc, k = 0, i - 1
        while k >= lo:
            acc += depth_change(lines[k])
            if acc > 0:
                break
            k -= 1
        if k < lo or not lines[k].rstrip().endswith("("):
            return i
        i = k


def yaml_item(lines, start, end):
    """The template resources (or other top-level entries) around lines[start:end], through
    the end of the one the last line is in."""
    def entry_top(k):
        while k > 0 and (indent(lines[k]) > 2 or not lines[k].strip() or lines[k].lstrip().startswith("#")):
            k -= 1
        return k

    top, last = entry_top(start), entry_top(max(end - 1, start))
    i = last + 1
    while i < len(lines) and (not lines[i].strip() or indent(lines[i]) > indent(lines[last])):
        i += 1
    while i > last + 1 and not lines[i - 1].strip():
        i -= 1
    return top, max(i, end)


def yaml_unit(lines, i, lo, hi):
    j = i + 1
    if lines[i].rstrip().endswith(":"):
        while j < hi and (not lines[j].strip() or indent(lines[j]) > indent(lines[i])):
            j += 1
        while j > i + 1 and not lines[j - 1].strip():
            j -= 1
    return i, j


def toml_item(lines, start, end):
    """The TOML tables whose headers the excerpt shows."""
    headers = [k for k in range(start, end) if re.match(r"^\[", lines[k])]
    if not headers:
        return start, end
    top = headers[0]
    i = headers[-1] + 1
    while i < len(lines) and not re.match(r"^\[", lines[i]):
        i += 1
    return top, max(i, end)


def toml_unit(lines, i, lo, hi):
    line = lines[i]
    if re.match(r"^\[", line):
        j = i + 1
        while j < hi and lines[j].strip():
            j += 1
        return i, j
    if re.match(r"^\s*- ", line):
        j = i + 1
        while j < hi and indent(lines[j]) > indent(line) and not lines[j].lstrip().startswith("- "):
            j += 1
        return i, j
    # A continuation line of a prompt's bullet: the whole bullet.
    k = i
    while k > lo and not re.match(r"^\s*- ", lines[k]) and indent(lines[k]) > 0:
        k -= 1
    if re.match(r"^\s*- ", lines[k]) and k != i:
        return toml_unit(lines, k, lo, hi)
    return i, i + 1


def inline_list(line, ex):
    """The line with the new names added next to the examples' in an inline list
    (`["a", "b"]`, `` `a`, `b` ``, `for bin in a b; do`), or None."""
    element = re.compile(r'(["`])([^"`]+)\1(,\s*)')
    if len(element.findall(line)) >= 2:
        return element.sub(lambda m: m.group(0) + (f"{m.group(1)}{ex.rename(m.group(2))}{m.group(1)}{m.group(3)}"
                                                   if ex.names(m.group(2)) and ex.rename(m.group(2)) != m.group(2)
                                                   else ""), line)
    m = re.match(r"^(\s*for \w+ in )(.*)(; do.*)$", line)
    if m:
        words = []
        for w in m.group(2).split():
            words.append(w)
            if ex.names(w):
                words.append(ex.rename(w))
        return m.group(1) + " ".join(words) + m.group(3)
    return None


def clone_in(text, path, excerpts, ex):
    """The file with every piece around the excerpts that names an example repeated for the
    new names."""
    lines = text.split("\n")
    kind = Path(path).suffix
    item, unit = {
        ".rs": (rust_item, rust_unit),
        ".yaml": (yaml_item, yaml_unit),
        ".toml": (toml_item, toml_unit),
    }.get(kind, (lambda ls, s, e: (s, e), lambda ls, i, lo, hi: (i, i + 1)))
    regions = []
    for excerpt in excerpts:
        found = occurrences(lines, excerpt)
        if not found:
            raise GuideError(f"{path}: an excerpt of the guide is not in the file:\n{excerpt}")
        regions += [item(lines, s, e) for s, e in found]
    units, inline = [], {}
    for lo, hi in sorted(set(regions)):
        i = lo
        while i < hi:
            line = lines[i]
            comment = line.lstrip().startswith("//" if kind == ".rs" else "#")
            if comment or not ex.names(line):
                i += 1
                continue
            changed = inline_list(line, ex)
            if changed is not None:
                inline[i] = changed
                i += 1
                continue
            start = enclosing_call(lines, i, lo) if kind == ".rs" else i
            s, e = unit(lines, start, lo, hi)
            units.append((s, e))
            i = max(e, i + 1)
    for i, changed in inline.items():
        lines[i] = changed
    # Later pieces first, so the earlier positions hold.
    for s, e in sorted(set(units), reverse=True):
        piece = lines[s:e]
        copy = [ex.rename(line) for line in piece]
        # "The last tool in the list that takes `functions` moves it. Earlier ones take
        # `functions.clone()`."
        if any(line.strip() == "functions," for line in copy):
            piece = [line.replace("functions,", "functions.clone(),") if line.strip() == "functions," else line
                     for line in piece]
        # A top-level item, resource or table keeps its blank line.
        if re.match(r"^\[", piece[0]) or (kind == ".rs" and indent(piece[0]) == 0 and len(piece) > 1) or (
                kind == ".yaml" and indent(piece[0]) == 2 and piece[0].rstrip().endswith(":")):
            copy = [""] + copy
        lines[s:e] = piece + copy
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Following the guide


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True, text=True).stdout


def apply(guide_path, tree):
    guide = Path(guide_path).read_text()
    ex = Examples(guide, tree)
    steps = []  # (what, path) in the order done

    # New files and directories: renamed copies of the examples'.
    copies = {}
    for path, _, _, _ in blocks(guide):
        if path and ex.names(path):
            copies[path] = ex.rename(path)
    listed = checklist_paths(guide, ex)
    for raw, example, new in listed:
        if "<" in raw and example != new and (tree / example).exists():
            copies[example] = new
    for example, new in sorted(copies.items()):
        src, dst = tree / example, tree / new
        if not src.exists():
            raise GuideError(f"the guide's example {example} does not exist")
        files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
        for f in files:
            target = dst if src.is_file() else dst / ex.rename(str(f.relative_to(src)))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(ex.rename(f.read_text()))
        steps.append(("copy of " + example, new))

    # Edits around the excerpts.
    excerpts = {}
    for path, _, body, _ in blocks(guide):
        if path and path not in copies:
            excerpts.setdefault(path, []).append(body)
    for path, bodies in excerpts.items():
        file = tree / path
        if not file.exists():
            raise GuideError(f"the guide quotes {path}, which does not exist")
        file.write_text(clone_in(file.read_text(), path, bodies, ex))
        steps.append(("as its excerpts show", path))

    print("follow: new names:", ", ".join(ex.new(n) for n in (ex.tool, ex.function_tool, ex.function)))
    for what, path in steps:
        print(f"follow: {path} ({what})")
    check(guide_path, tree)


def check(guide_path, tree):
    """Fails, naming them, when files changed in the tree that the Checklist does not name."""
    guide = Path(guide_path).read_text()
    ex = Examples(guide, tree)
    listed = checklist_paths(guide, ex)
    changed = set(git(tree, "status", "--porcelain", "--untracked-files=all").split("\n"))
    changed = {line[3:] for line in changed if line}
    named = set()
    for _, example, new in listed:
        named |= {example, new}
    missing = sorted(p for p in changed if not any(p == n or p.startswith(n + "/") for n in named))
    if missing:
        raise GuideError("the new tools touch files the guide's Checklist does not name:\n  "
                         + "\n  ".join(missing))


def commands(guide_path):
    """The new names, then the guide's sh blocks rewritten for them, as JSON."""
    guide = Path(guide_path).read_text()
    ex = Examples(guide, Path("."))
    sh = [ex.rename(body) for path, lang, body, _ in blocks(guide) if lang == "sh" and not path]
    print(json.dumps({"tool": ex.new(ex.tool), "function_tool": ex.new(ex.function_tool),
                      "function": ex.new(ex.function), "sh": sh}))


def main():
    try:
        if len(sys.argv) == 4 and sys.argv[1] == "apply":
            apply(sys.argv[2], Path(sys.argv[3]))
        elif len(sys.argv) == 4 and sys.argv[1] == "check":
            check(sys.argv[2], Path(sys.argv[3]))
        elif len(sys.argv) >= 4 and sys.argv[1] == "unnamed":
            guide = Path(sys.argv[2]).read_text()
            named = set()
            for _, example, new in checklist_paths(guide, Examples(guide, Path(sys.argv[3]))):
                named |= {example, new}
            print(" ".join(p for p in sys.argv[4:] if not any(p == n or p.startswith(n + "/") for n in named)))
        elif len(sys.argv) == 3 and sys.argv[1] == "commands":
            commands(sys.argv[2])
        else:
            sys.exit(__doc__)
    except GuideError as e:
        sys.exit(f"add-a-tool: following the guide failed: {e}")


if __name__ == "__main__":
    main()
