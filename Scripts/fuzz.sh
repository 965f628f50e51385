#!/usr/bin/env bash
# Coverage-guided fuzzing of one reader of outside bytes (docs/SECURITY.md lists them), with
# libFuzzer and AddressSanitizer from the Swift toolchain.
#
#   Scripts/fuzz.sh TARGET SECONDS [LIBFUZZER-OPTION…]   fuzz one target, e.g. client-messages 600
#   Scripts/fuzz.sh all SECONDS                          every target in turn, from the seeds alone
#   Scripts/fuzz.sh ci SECONDS                           the same, built in .build/release after livelist (CI)
#   Scripts/fuzz.sh build                                build every target, run none
#   Scripts/fuzz.sh list                                 the targets
#
# Builds `fuzz-TARGET` with -sanitize=fuzzer,address, optimized (-O: three times the executions of
# -Onone), in its own folder (.build-fuzz, so that the shared .build is left alone), then runs it from the committed seeds, Tests/Fuzz/TARGET/
# (never written), and the corpus it grew before, .build-fuzz/corpus/TARGET/, with the dictionary
# Tests/Fuzz/TARGET.dict when there is one. Every committed input — seeds and the inputs of the
# crashes fixed — runs first, so a run is also their regression test.
#
# A crash, a failed precondition, an ASan report, an input running over 10 s or over 2 GB fails the
# run (exit 1): its input is kept in .build-fuzz/crashes/TARGET/ and printed, path and base64.
# Keep it in Tests/Fuzz/TARGET/ once fixed. The last line of a run says what it did:
# `fuzz TARGET: N runs in S s (E/s), cov C, ft F, corpus K, findings X`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x /opt/swift/usr/bin/swift ] && ! command -v swift >/dev/null 2>&1; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

targets() {
    ls -d Sources/Fuzz/*/ | xargs -n1 basename | grep -v '^Support$'
}

usage() {
    echo "usage: Scripts/fuzz.sh TARGET|all SECONDS [LIBFUZZER-OPTION…] | build | list; targets: $(targets | tr '\n' ' ')" >&2
    exit 2
}

scratch=.build-fuzz
build() {
    local status=0
    mkdir -p "$scratch"
    # Only what went wrong: errors and warnings (a dependency's unhandled files aside).
    swift build --scratch-path "$scratch" --product "fuzz-$1" \
        -Xswiftc -O -Xswiftc -DLIVELIST_FUZZ -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld >"$scratch/build.log" 2>&1 || status=$?
    grep -E "error:|warning:" "$scratch/build.log" | grep -v "unhandled; explicitly declare" | sort -u >&2 || true
    [ "$status" -eq 0 ] || { echo "fuzz-$1 did not build" >&2; return 1; }
}

run() {
    local target=$1 seconds=$2
    shift 2
    local corpus="$scratch/${corpus_folder:-corpus}/$target" crashes="$scratch/crashes/$target" log
    mkdir -p "$corpus" "$crashes"
    log=$(mktemp)
    local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1
                   -artifact_prefix="$crashes/")
    [ -f "Tests/Fuzz/$target.dict" ] && options+=(-dict="Tests/Fuzz/$target.dict")
    local started status=0
    started=$(date +%s)
    # Swift's own backtracer would race libFuzzer's handler; leaks are Swift's caches, not findings.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
        "${binaries:-$scratch/debug}/fuzz-$target" "${options[@]}" "$@" "$corpus" "Tests/Fuzz/$target" >"$log" 2>&1 || status=$?
    local elapsed=$(( $(date +%s) - started ))
    local done runs rate cov ft corpus_size findings=0
    done=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    runs=$(grep -o 'number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    rate=$(grep -o 'average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(echo "$done" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
    ft=$(echo "$done" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
    corpus_size=$(echo "$done" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*' || echo "?")
    if [ "$status" -ne 0 ]; then
        findings=1
        # What went wrong, without the stack frames of libFuzzer itself.
        grep -v '^    #[0-9]* 0x[0-9a-f]* in \(fuzzer::\|__sanitizer\|__asan\|__interceptor\)' "$log" \
            | grep -A40 -m1 'ERROR\|Fatal error\|Precondition failed\|deadly signal\|timeout\|out-of-memory' | head -n 60 >&2 || true
        for artifact in $(grep -o "Test unit written to [^ ]*" "$log" | sed 's/Test unit written to //'); do
            echo "::: fuzz $target: finding kept in $artifact (move it to Tests/Fuzz/$target/ once fixed)" >&2
            echo "::: base64: $(base64 -w0 "$artifact")" >&2
        done
    fi
    rm -f "$log"
    echo "fuzz $target: ${runs} runs in ${elapsed} s (${rate}/s), cov ${cov}, ft ${ft}, corpus ${corpus_size}, findings ${findings}"
    return "$status"
}

[ $# -ge 1 ] || usage
case $1 in
    list) targets; exit 0 ;;
    build)
        for target in $(targets); do build "$target"; done
        ;;
    all)
        [ $# -ge 2 ] || usage
        # From the committed seeds alone, so that every run takes the same time (a grown corpus
        # would be read whole first).
        corpus_folder=corpus-all
        rm -rf "$scratch/$corpus_folder"
        failed=()
        for target in $(targets); do build "$target" || { failed+=("$target (build)"); continue; }; done
        for target in $(targets); do
            [ -x "$scratch/debug/fuzz-$target" ] || continue
            run "$target" "$2" || failed+=("$target")
        done
        if [ ${#failed[@]} -gt 0 ]; then
            echo "fuzzing found something in: ${failed[*]}" >&2
            exit 1
        fi
        ;;
    ci)
        # CI: after `swift build -c release --product livelist`, the targets are built in that
        # folder with only this package's modules instrumented (Package.swift reads
        # LIVELIST_FUZZ_BUILD), reusing the dependencies built there: the step compiles this package
        # alone, where `all` builds the whole graph again. Each runs from the committed seeds.
        [ $# -ge 2 ] || usage
        binaries=.build/release
        corpus_folder=corpus-ci
        mkdir -p "$scratch"
        rm -rf "$scratch/$corpus_folder"
        failed=()
        for target in $(targets); do
            LIVELIST_FUZZ_BUILD=1 swift build -c release --product "fuzz-$target" >"$scratch/ci-build.log" 2>&1 \
                || { grep -E "error:" "$scratch/ci-build.log" | sort -u >&2; failed+=("$target (build)"); }
        done
        for target in $(targets); do
            [ -x "$binaries/fuzz-$target" ] || continue
            run "$target" "$2" || failed+=("$target")
        done
        if [ ${#failed[@]} -gt 0 ]; then
            echo "fuzzing found something in: ${failed[*]}" >&2
            exit 1
        fi
        ;;
    *)
        [ $# -ge 2 ] || usage
        targets | grep -qx "$1" || usage
        target=$1 seconds=$2
        shift 2
        # LIVELIST_FUZZ_NO_BUILD=1: run what was built (another build may hold .build-fuzz's lock).
        [ -n "${LIVELIST_FUZZ_NO_BUILD:-}" ] || build "$target"
        run "$target" "$seconds" "$@" || exit 1
        ;;
esac
