#!/usr/bin/env python3
"""Checks the sizes a reader can hold in mind: no function, initializer or accessor in Sources/ over
80 lines, and no Swift file over 500 lines unless it is listed below with the one concept it holds.
Prints each offender with its place and exits 1 when there is any. Runs without building anything.

A function is counted from its declaration to its closing brace; comments and blank lines count
(a long comment is read too)."""
import os
import re
import sys

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 500

# Files over the limit that hold one concept each, and why they stay whole.
ONE_CONCEPT = {
    "Sources/LiveQueryCore/Index/CountedTree.swift":
        "the order-statistic B-tree: its nodes, splits, merges and rank queries share invariants that are checked together",
    "Sources/LiveQuery/Planning/SelectPlanner.swift":
        "SQLite's planner of one SELECT: resolving names, joins, sort terms and the plan it makes read as one pass",
    "Sources/LiveQueryPostgres/PostgresSelectParser.swift":
        "the parser of PostgreSQL's SELECT structure: one recursive-descent grammar",
}

DECLARATION = re.compile(
    r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|private|fileprivate|internal|package|open|static|class|final|override|mutating|nonmutating|"
    r"nonisolated|convenience|required|isolated|dynamic|lazy|weak|unowned)(?:\([^)]*\))?\s+)*"
    r"(func\s+\S|init[?!]?\s*[<(]|deinit\b|subscript\s*[<(])")
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def function_lengths(lines):
    """(first line, length, text) of each function-like declaration with a body."""
    found = []
    for index, line in enumerate(lines):
        if line.lstrip().startswith("//") or not DECLARATION.match(line):
            continue
        depth, started, end = 0, False, None
        for offset in range(index, len(lines)):
            code = STRING.sub('""', lines[offset]).split("//")[0]
            for character in code:
                if character == "{":
                    depth += 1
                    started = True
                elif character == "}":
                    depth -= 1
            if started and depth <= 0:
                end = offset
                break
            if not started and offset > index + 10:   # a requirement without a body
                break
        if end is not None:
            found.append((index + 1, end - index + 1, line.strip()))
    return found


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = []
    for folder, _, files in os.walk(os.path.join(root, "Sources")):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as file:
                lines = file.read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if len(lines) > MAX_FILE_LINES and relative not in ONE_CONCEPT:
                problems.append(f"{relative}: {len(lines)} lines (over {MAX_FILE_LINES}): split it by concept, or list it in "
                                f"Scripts/check-sizes.py with the one concept it holds")
            for line, length, text in function_lengths(lines):
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{relative}:{line}: {length} lines (over {MAX_FUNCTION_LINES}): {text[:100]}")
    for listed in ONE_CONCEPT:
        if not os.path.exists(os.path.join(root, listed)):
            problems.append(f"{listed}: listed in Scripts/check-sizes.py, but there is no such file")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"sizes: every function within {MAX_FUNCTION_LINES} lines, every file within {MAX_FILE_LINES} or holding one concept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
