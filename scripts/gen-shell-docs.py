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
    doc = {"description": lines[0] if lines else "", "usage": "", "sections": {}}
    section = None
    for line in lines[1:]:
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
    for name, doc in subs.items():
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


def bash_completion(tool, top, subs):
    fn = "_tk_" + tool
    lines = [f"# bash completion for {tool} (generated from its --help by scripts/gen-shell-docs.py)",
             f"{fn}() {{", '  local cur="${COMP_WORDS[COMP_CWORD]}" sub="" i',
             '  for ((i = 1; i < COMP_CWORD; i++)); do',
             '    case "${COMP_WORDS[i]}" in -*) ;; *) sub="${COMP_WORDS[i]}"; break ;; esac',
             "  done", "  local opts", '  case "$sub" in']
    for name, doc in subs.items():
        lines.append(f'    {name}) opts="{" ".join(options_of(doc))}" ;;')
    lines += [f'    *) opts="{" ".join(options_of(top))}" ;;', "  esac",
              '  if [[ "$cur" == -* ]]; then',
              '    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")']
    if subs:
        lines += ['  elif [[ -z "$sub" ]]; then',
                  f'    mapfile -t COMPREPLY < <(compgen -W "{" ".join(subs)}" -- "$cur"; compgen -f -- "$cur")']
    lines += ["  else", '    mapfile -t COMPREPLY < <(compgen -f -- "$cur")', "  fi", "}",
              f"complete -o filenames -F {fn} {tool}"]
    return "\n".join(lines) + "\n"


def fish_quote(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_completion(tool, top, subs):
    lines = [f"# fish completion for {tool} (generated from its --help by scripts/gen-shell-docs.py)"]
    if subs:
        names = " ".join(subs)
        for name, doc in subs.items():
            lines.append(f"complete -c {tool} -n '__fish_use_subcommand' -a {name} -d {fish_quote(doc['description'])}")
        for name, doc in subs.items():
            lines += fish_options(tool, doc, f"__fish_seen_subcommand_from {name}")
        lines += fish_options(tool, top, f"not __fish_seen_subcommand_from {names}")
    else:
        lines += fish_options(tool, top, None)
    return "\n".join(lines) + "\n"


def fish_options(tool, doc, condition):
    out = []
    for title, entries in doc["sections"].items():
        if title != "Options":
            continue
        for names, desc in entries:
            args = []
            for n in option_names(names):
                args.append(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}")
            cond = f" -n {fish_quote(condition)}" if condition else ""
            out.append(f"complete -c {tool}{cond} {' '.join(args)} -d {fish_quote(desc[:80])}")
    return out


def zsh_completion(docs):
    lines = ["#compdef " + " ".join(docs),
             "# zsh completion for the tensorkit tools (generated from their --help by scripts/gen-shell-docs.py)",
             "local -a subs opts", "case $service in"]
    for tool, (top, subs) in docs.items():
        lines.append(f"  {tool})")
        lines.append(f"    subs=({' '.join(subs)})")
        lines.append(f"    opts=({' '.join(sorted(set(options_of(top) + [o for d in subs.values() for o in options_of(d)])))})")
        lines.append("    ;;")
    lines += ["esac",
              "if [[ $PREFIX == -* ]]; then",
              "  compadd -- $opts",
              "elif (( CURRENT == 2 )) && (( ${#subs} )); then",
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
        subs = {}
        for name, _ in top["sections"].get("Subcommands", []):
            subs[name] = parse(help_text(binary, [name]))
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
