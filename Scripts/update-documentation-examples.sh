#!/bin/sh
# Writes Tests/DocumentationTests/Examples/ from the Swift blocks of README.md, docs/, the DocC
# catalogs and the doc comments: one file per block, verbatim, named after its source and the
# first name it declares; deletes files no block has. `--check` lists what is out of date instead
# (exit status 1). Needs only a Swift toolchain: the package is not built.
set -eu
cd "$(dirname "$0")/.."
out=.build/update-documentation-examples
mkdir -p "$out"
swiftc -module-name UpdateDocumentationExamples -o "$out/update" \
    Tests/DocumentationTests/DocumentedExamples.swift Scripts/update-documentation-examples/main.swift
exec "$out/update" "$@"
