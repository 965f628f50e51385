#!/usr/bin/env bash
# Writes Sources/LiveListServer/_WebFiles.swift from Web/ (the web client and the demo page), so
# that `livelist serve` and the LiveListServer library carry them with no resource bundle.
# With --check, fails when the Swift file is not what Web/ makes (the test suite checks it too).
set -euo pipefail
cd "$(dirname "$0")/.."
output=Sources/LiveListServer/_WebFiles.swift
generated=$(python3 - <<'PY'
import os
files = [("livelist.js", "text/javascript; charset=utf-8"), ("livelist-view.js", "text/javascript; charset=utf-8"),
         ("demo.html", "text/html; charset=utf-8")]
out = ["// Generated from Web/ by Scripts/embed-web.sh: edit Web/ and run it again.", "",
       "/// The web client's files as `livelist serve` sends them.", "enum _WebFiles {",
       "    static let files: [String: (contentType: String, body: String)] = ["]
for name, kind in files:
    text = open(os.path.join("Web", name), encoding="utf-8").read()
    assert '"""##' not in text, name
    out.append(f'        "{name}": ("{kind}", ##"""')
    out.append(text.rstrip("\n"))
    out.append('"""##),')
out.append("    ]")
out.append("}")
print("\n".join(out))
PY
)
if [ "${1:-}" = "--check" ]; then
    if [ "$generated" != "$(cat "$output")" ]; then
        echo "$output is not what Web/ makes: run Scripts/embed-web.sh" >&2
        exit 1
    fi
    exit 0
fi
printf '%s\n' "$generated" > "$output"
