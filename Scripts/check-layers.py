#!/usr/bin/env python3
"""Checks the package's layering from `swift package dump-package`: each library module links only
what its layer may (a module never reaches upward; ListDiff and ListPresenter know nothing of
databases or sockets; an app or server that follows PostgreSQL only links no SQLite, and one over
SQLite no PostgreSQL). Prints each module's forbidden dependencies and exits 1 when there is any.
Runs without building anything."""
import json
import subprocess
import sys

SQLITE = {"GRDB", "GRDBSQLite", "LiveQuery", "LiveQueryUI", "LiveListServerSQLite"}
POSTGRES = {"PostgresNIO", "CLibPQ", "LiveQueryPostgres", "LiveListServerPostgres", "NIOSSL"}
# (HummingbirdWSCompression is not here: the client compresses too.)
# A server links no presenter: the list-view side of a live query stays in the apps' modules.
PRESENTER = {"ListPresenter", "LiveQueryPresenting", "LiveQueryUI", "LiveQueryPostgresUI"}
SERVER = {"Hummingbird", "HummingbirdCore", "HummingbirdWebSocket", "LiveListServer", "JWTKit"}

# module -> what its closure may hold at most ("only"), or must not hold ("never").
RULES = {
    "ListDiff": {"only": set()},
    "ListPresenter": {"only": {"ListDiff"}},
    "ListTesting": {"only": {"ListDiff", "ListPresenter"}},
    "LiveListUIKit": {"only": {"ListDiff", "ListPresenter"}},
    "LiveListWire": {"only": {"ListDiff"}},
    "LiveQueryCore": {"only": {"ListDiff"}},
    "LiveQueryPresenting": {"only": {"ListDiff", "ListPresenter", "LiveQueryCore"}},
    "LiveQuery": {"never": POSTGRES | SERVER},
    "LiveQueryUI": {"never": POSTGRES | SERVER},
    "LiveQueryPostgres": {"never": SQLITE | SERVER | PRESENTER},
    "LiveQueryPostgresUI": {"never": SQLITE | SERVER},
    "LiveListServer": {"never": SQLITE | POSTGRES | PRESENTER},
    "LiveListServerSQLite": {"never": POSTGRES | PRESENTER},
    "LiveListServerPostgres": {"never": SQLITE | PRESENTER},
    "LiveListClient": {"never": SQLITE | POSTGRES | SERVER},
    "LiveListOffline": {"never": POSTGRES | SERVER},
}


def dependencies(package):
    """Each target's direct dependencies, by target or product name."""
    direct = {}
    for target in package["targets"]:
        names = []
        for dependency in target.get("dependencies", []):
            for kind in ("byName", "target", "product"):
                if kind in dependency:
                    names.append(dependency[kind][0])
        direct[target["name"]] = names
    return direct


def closure(name, direct, seen=None):
    seen = set() if seen is None else seen
    for dependency in direct.get(name, []):
        if dependency not in seen:
            seen.add(dependency)
            closure(dependency, direct, seen)
    return seen


def main():
    dumped = subprocess.run(["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout
    direct = dependencies(json.loads(dumped))
    failures = []
    for module, rule in RULES.items():
        if module not in direct:
            failures.append(f"{module}: no such target (update Scripts/check-layers.py)")
            continue
        linked = closure(module, direct)
        wrong = linked - rule["only"] if "only" in rule else linked & rule["never"]
        if wrong:
            failures.append(f"{module} links {', '.join(sorted(wrong))}")
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"layers: {len(RULES)} library modules link only what their layer may")


if __name__ == "__main__":
    main()
