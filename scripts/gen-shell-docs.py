#!/usr/bin/env python3
"""Man pages and shell completions for the tools, generated from their --help.

  gen-shell-docs.py --bin DIR --out DIR [TOOL...]

The one source is each tool's --help (and each subcommand's): OUT/man/man1/TOOL.1 (a
man page: name, synopsis, description, options, subcommands with their options,
examples, exit status), OUT/bash-completion/TOOL (bash: subcommands, then the options of the
subcommand given, else file names), OUT/zsh/_tensorkit (zsh, all tools) and
OUT/fish/TOOL.fish (fish). Run by the build after the tools are linked; installed by
`cmake --install`.
"""
import argparse
import os
import re
import subprocess
import sys

TOOLS = ["tinfo", "tconvert", "tdecomp", "tquant", "tcompress", "tckpt", "tbench"]
def help_text(binary, words):
    r = subprocess.run([binary] + words + ["--help"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"gen-shell-docs.py: error: {' '.join([binary] + words)} --help exited {r.returncode}")
    return r.stdout


def parse(text):
    """{description, usage, sections: {title: [(names, description)]}} of a --help text."""
    lines = text.splitlines()
    # The description: the lines before "Usage: " (wrapped to 100 columns).
    head = 0
    while head < len(lines) and not lines[head].startswith("Usage: "):
        head += 1
    doc = {"description": " ".join(l.strip() for l in lines[:head]).strip(), "usage": "", "sections": {}}
    section = None
    for line in lines[head:]:
        if line.startswith("Usage: "):
            doc["usage"] = line[len("Usage: "):]
        elif re.match(r"^[A-Z][A-Za-z ]*:$", line):
            section = line[:-1]
            doc["sections"][section] = []
        elif section and line.startswith("  ") and not line.startswith(" " * 4):
            m = re.match(r"^  (\S.*?)(?:\s{2,}(.*))?$", line)
            doc["sections"][section].append([m.group(1), m.group(2) or ""])
        elif section and line.strip() and doc["sections"][section]:
            entry = doc["sections"][section][-1]
            entry[1] = (entry[1] + " " + line.strip()).strip()
    return doc


def option_names(entry_names):
    """The flags of an option entry: '-t,--tensors GLOB ...' -> ['-t', '--tensors']."""
    head = entry_names.split(" ")[0]
    return [n for n in head.split(",") if n.startswith("-")]


def roff(text):
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def man_page(tool, top, subs, version):
    out = [f'.TH {tool.upper()} 1 "" "tensorkit {version}" "tensorkit manual"',
           ".SH NAME", f"{tool} \\- {roff(top['description'])}",
           ".SH SYNOPSIS", f".B {roff(top['usage'])}", ".SH DESCRIPTION", roff(top["description"]) + "."]
    # Examples and exit codes close the page, as they close --help.
    last = ("Examples", "Exit codes")
    for title, entries in top["sections"].items():
        if title in last:
            continue
        out.append(f".SH {title.upper()}")
        for names, desc in entries:
            out += [".TP", f".B {roff(names)}", roff(desc)]
    for path, doc in subs.items():
        name = " ".join(path)
        out += [f'.SH "{tool.upper()} {name.upper()}"', roff(doc["description"]) + ".",
                ".PP", f".B {roff(doc['usage'])}"]
        for title, entries in doc["sections"].items():
            if title in last:  # the tool's own, repeated in every subcommand's help
                continue
            out += [".PP", f".I {title}"]
            for names, desc in entries:
                out += [".TP", f".B {roff(names)}", roff(desc)]
    if "Examples" in top["sections"]:
        out.append(".SH EXAMPLES")
        for command, what in top["sections"]["Examples"]:
            out += [".TP", f".B {roff(command)}", roff(what)]
    out.append(".SH EXIT STATUS")
    for code, meaning in top["sections"].get("Exit codes", []):
        out += [".TP", f".B {code}", roff(meaning)]
    out += [".SH SEE ALSO", ", ".join(f"{t}(1)" for t in TOOLS if t != tool)]
    return "\n".join(out) + "\n"


def options_of(doc):
    flags = []
    for title, entries in doc["sections"].items():
        if title == "Options":
            for names, _ in entries:
                flags += option_names(names)
    return flags


def expand_scheme(name):
    """Completion words of a 'Schemes:' entry: 'int2..int8' -> int2 .. int8, 'kmeans:BITS' -> 'kmeans:'."""
    m = re.match(r"^([a-z]+)(\d+)\.\.\1(\d+)$", name)
    if m:
        return [f"{m.group(1)}{b}" for b in range(int(m.group(2)), int(m.group(3)) + 1)]
    return [name.split(":")[0] + ":"] if ":" in name else [name]


def section_words(docs, title):
    """First words of the entries of section `title` in the first of `docs` that has it."""
    for doc in docs:
        if title in doc["sections"]:
            return [entry[0].split(" ")[0] for entry in doc["sections"][title]]
    return []


def option_values(doc, top):
    """{flag: [values]} for the options of `doc` whose values are a known set: a type name
    listing them ('safetensors|hdf5', 'cuda[:N]' offered as 'cuda'), --scheme (the tool's
    'Schemes:'), a DT (the tool's 'Float dtypes:')."""
    out = {}
    for title, entries in doc["sections"].items():
        if title != "Options":
            continue
        for names, _ in entries:
            parts = names.split(" ")
            kind = parts[1] if len(parts) > 1 else ""
            values = []
            if "|" in kind:
                values = [re.sub(r"\[.*?\]", "", v) for v in kind.split("|")]
            elif "--scheme" in option_names(names):
                values = [w for n in section_words([doc, top], "Schemes") for w in expand_scheme(n)]
            elif kind == "DT":
                values = section_words([doc, top], "Float dtypes")
            if values:
                for flag in option_names(names):
                    out[flag] = values
    return out


def subcommand_paths(subs):
    """The subcommand paths ('store', 'store add') of `subs`, {path: doc}."""
    return {" ".join(path): doc for path, doc in subs.items()}


def bash_completion(tool, top, subs):
    """bash: the subcommand path on the line (store, store add), then its options after '-',
    the values of an option that takes a known set, its subcommands, else file names."""
    fn = "_tk_" + tool
    paths = subcommand_paths(subs)
    lines = [f"# bash completion for {tool} (generated from its --help by scripts/gen-shell-docs.py)",
             f"{fn}() {{",
             '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" cand i',
             '  ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD-1]}"',
             '  for ((i = 1; i < COMP_CWORD; i++)); do',
             '    case "${COMP_WORDS[i]}" in -*) continue ;; esac',
             '    cand="${path:+$path }${COMP_WORDS[i]}"',
             '    case "$cand" in']
    if paths:
        lines.append("      " + "|".join(f'"{p}"' for p in paths) + ') path="$cand" ;;')
    lines += ["    esac", "  done", '  case "$path|$prev" in']
    for path, doc in [("", top)] + list(paths.items()):
        for flag, values in option_values(doc, top).items():
            lines.append(f'    "{path}|{flag}") mapfile -t COMPREPLY < <(compgen -W "{" ".join(values)}" -- "$cur"); return ;;')
    lines += ["  esac", '  local opts="" words=""', '  case "$path" in']
    for path, doc in paths.items():
        children = [p.split(" ")[-1] for p in paths if p.startswith(path + " ") and p.count(" ") == path.count(" ") + 1]
        lines.append(f'    "{path}") opts="{" ".join(options_of(doc))}"; words="{" ".join(children)}" ;;')
    top_children = [p for p in paths if " " not in p]
    lines += [f'    *) opts="{" ".join(options_of(top))}"; words="{" ".join(top_children)}" ;;', "  esac",
              '  if [[ "$cur" == -* ]]; then',
              '    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")',
              '  elif [[ -n "$words" ]]; then',
              '    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur"; compgen -f -- "$cur")',
              "  else", '    mapfile -t COMPREPLY < <(compgen -f -- "$cur")', "  fi", "}",
              f"complete -o filenames -F {fn} {tool}"]
    return "\n".join(lines) + "\n"


def fish_quote(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_path_condition(path, paths):
    """fish condition: `path`'s words seen, and none of its subcommands yet."""
    conds = [f"__fish_seen_subcommand_from {w}" for w in path.split(" ")] if path else []
    children = [p.split(" ")[-1] for p in paths if (p.startswith(path + " ") if path else True)
                and p.count(" ") == (path.count(" ") + 1 if path else 0)]
    if children:
        conds.append("not __fish_seen_subcommand_from " + " ".join(children))
    return "; and ".join(conds) if conds else None


def fish_completion(tool, top, subs):
    paths = subcommand_paths(subs)
    lines = [f"# fish completion for {tool} (generated from its --help by scripts/gen-shell-docs.py)"]
    for path, doc in paths.items():
        parent = " ".join(path.split(" ")[:-1])
        cond = fish_path_condition(parent, paths)
        cond_arg = f" -n {fish_quote(cond)}" if cond else ""
        lines.append(f"complete -c {tool}{cond_arg} -a {path.split(' ')[-1]} -d {fish_quote(doc['description'][:80])}")
    for path, doc in [("", top)] + list(paths.items()):
        lines += fish_options(tool, doc, top, fish_path_condition(path, paths))
    return "\n".join(lines) + "\n"


def fish_options(tool, doc, top, condition):
    out = []
    values = option_values(doc, top)
    for title, entries in doc["sections"].items():
        if title != "Options":
            continue
        for names, desc in entries:
            args = []
            flags = option_names(names)
            for n in flags:
                args.append(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}")
            known = next((values[f] for f in flags if f in values), None)
            if known:
                args.append(f"-x -a {fish_quote(' '.join(known))}")
            cond = f" -n {fish_quote(condition)}" if condition else ""
            out.append(f"complete -c {tool}{cond} {' '.join(args)} -d {fish_quote(desc[:80])}")
    return out


def zsh_completion(docs):
    """zsh: as bash, from $words: the subcommand path, an option's known values, options,
    subcommands, else files."""
    lines = ["#compdef " + " ".join(docs),
             "# zsh completion for the tensorkit tools (generated from their --help by scripts/gen-shell-docs.py)",
             "local -a subs opts vals",
             "local path_ cand prev i extra=0",
             "path_=''",
             "prev=${words[CURRENT-1]}",
             "for ((i = 2; i < CURRENT; i++)); do",
             "  [[ ${words[i]} == -* ]] && continue",
             "  cand=\"${path_:+$path_ }${words[i]}\"",
             "  case \"$service:$cand\" in"]
    all_paths = [f"{tool}:{p}" for tool, (top, subs) in docs.items() for p in subcommand_paths(subs)]
    if all_paths:
        lines.append("    (" + "|".join(f"'{p}'" for p in all_paths) + ") path_=$cand ;;")
    lines += ["    (*) ((extra++)) ;;", "  esac", "done", "case \"$service:$path_:$prev\" in"]
    for tool, (top, subs) in docs.items():
        for path, doc in [("", top)] + list(subcommand_paths(subs).items()):
            for flag, values in option_values(doc, top).items():
                lines.append(f"  ('{tool}:{path}:{flag}') compadd -- {' '.join(values)}; return ;;")
    lines += ["esac", "case \"$service:$path_\" in"]
    for tool, (top, subs) in docs.items():
        paths = subcommand_paths(subs)
        for path, doc in [("", top)] + list(paths.items()):
            children = [p.split(" ")[-1] for p in paths if (p.startswith(path + " ") if path else True)
                        and p.count(" ") == (path.count(" ") + 1 if path else 0)]
            lines.append(f"  ('{tool}:{path}')")
            lines.append(f"    subs=({' '.join(children)})")
            lines.append(f"    opts=({' '.join(options_of(doc))})")
            lines.append("    ;;")
    lines += ["esac",
              "if [[ $PREFIX == -* ]]; then",
              "  compadd -- $opts",
              "elif (( ${#subs} )) && (( extra == 0 )); then",
              "  compadd -- $subs; _files",
              "else",
              "  _files",
              "fi"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("tools", nargs="*")
    args = ap.parse_args()
    tools = args.tools or TOOLS
    for d in ("man/man1", "bash-completion", "zsh", "fish"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    docs = {}
    for tool in tools:
        binary = os.path.join(args.bin, tool)
        top = parse(help_text(binary, []))
        subs = {}  # {(word, ...): doc}, every level (tcompress store add)
        pending = [[name] for name, _ in top["sections"].get("Subcommands", [])]
        while pending:
            path = pending.pop(0)
            doc = parse(help_text(binary, path))
            subs[tuple(path)] = doc
            pending += [path + [name] for name, _ in doc["sections"].get("Subcommands", [])]
        first = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        version = first.split()[-1] if first.split() else ""
        docs[tool] = (top, subs)
        with open(os.path.join(args.out, "man/man1", tool + ".1"), "w") as f:
            f.write(man_page(tool, top, subs, version))
        with open(os.path.join(args.out, "bash-completion", tool), "w") as f:
            f.write(bash_completion(tool, top, subs))
        with open(os.path.join(args.out, "fish", tool + ".fish"), "w") as f:
            f.write(fish_completion(tool, top, subs))
    with open(os.path.join(args.out, "zsh", "_tensorkit"), "w") as f:
        f.write(zsh_completion(docs))


if __name__ == "__main__":
    main()
