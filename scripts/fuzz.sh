#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ on the stable toolchain.
#
#   scripts/fuzz.sh TARGET SECONDS    run one target for SECONDS
#   scripts/fuzz.sh all SECONDS       run every target in turn, SECONDS each
#   scripts/fuzz.sh list              list the targets
#   scripts/fuzz.sh build             build only
#   FUZZ_NO_BUILD=1 scripts/fuzz.sh TARGET SECONDS   run without rebuilding
#
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 makes stable rustc accept them, and this
# script passes the same sanitizer-coverage flags cargo-fuzz would (no ASan: the crates are
# `forbid(unsafe_code)` or nearly, and the property checked is "no panic / no broken invariant").
# `cargo fuzz run TARGET` works too where cargo-fuzz and a nightly (or RUSTC_BOOTSTRAP=1) exist.
#
# Builds go to fuzz/target (git-ignored), one cargo job at a time. The corpus of each target is
# fuzz/corpus/TARGET (committed seeds; new inputs libFuzzer finds go to fuzz/target/corpus/TARGET,
# not committed); crashes go to fuzz/artifacts/TARGET/. The last lines of libFuzzer's output
# (executions, crashes) are appended to fuzz/target/fuzz-log.txt.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

TARGETS=(featurizer_transform featurizer_from_json datasets_parse privacy_votes privacy_matrix bundle_manifest bundle_onnx proxy_config)
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')

build() {
    # FUZZ_NO_BUILD=1 runs the binaries already in fuzz/target (e.g. several runs after one build).
    [[ -n ${FUZZ_NO_BUILD:-} ]] && return 0
    # $1 = extra cargo arguments (the proxy target needs `--features proxy`).
    RUSTC_BOOTSTRAP=1 \
    RUSTFLAGS="${RUSTFLAGS:-} --cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
    cargo build --release --target "$TRIPLE" --target-dir target --bins ${1:-}
}

run_one() {
    local target=$1 seconds=$2
    local seeds="corpus/$target" work="target/corpus/$target" artifacts="artifacts/$target"
    mkdir -p "$seeds" "$work" "$artifacts"
    echo "== $target for ${seconds}s"
    local log="target/$target.log"
    set +e
    "target/$TRIPLE/release/$target" "$work" "$seeds" \
        -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 2>"$log"
    local rc=$?
    set -e
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb|^==[0-9]+== ERROR|panicked|Test unit written' "$log" || true
    {
        echo "$(date -u +%FT%TZ) $target ${seconds}s rc=$rc"
        grep -E 'stat::number_of_executed_units|Test unit written' "$log" || true
    } >>target/fuzz-log.txt
    return $rc
}

case "${1:-}" in
    list) printf '%s\n' "${TARGETS[@]}" ;;
    build) build "--features proxy" ;;
    all)
        build "--features proxy"
        status=0
        for t in "${TARGETS[@]}"; do run_one "$t" "${2:?SECONDS}" || status=1; done
        exit $status ;;
    "") echo "usage: $0 TARGET|all SECONDS | list | build" >&2; exit 2 ;;
    *)
        [[ " ${TARGETS[*]} " == *" $1 "* ]] || { echo "unknown target $1 (see: $0 list)" >&2; exit 2; }
        if [[ $1 == proxy_config ]]; then build "--features proxy"; else build; fi
        run_one "$1" "${2:?SECONDS}" ;;
esac
