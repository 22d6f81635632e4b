# Fuzzing: the cargo-fuzz targets of the parsers and decoders on nightly,
# within one fixed time budget, SPINDLE_FUZZ_SECONDS (default 150) shared
# equally: the pattern parser must survive any UTF-8 input and print
# patterns that parse back to the same tree; relaxed JSON must read strict
# JSON as serde_json does; the library's log and data file and the
# listens log must refuse or load any bytes without a panic and keep only
# whole records.
#
# What CI leaves out, and why: the targets that reach the whole server
# (http_request, http_range; `required-features = ["server"]` in
# fuzz/Cargo.toml) and AddressSanitizer (`-s none` here). Building the
# server with libFuzzer's instrumentation on nightly took CI longer than a
# quarter of an hour on a 2-core machine, more than all the fuzzing; the
# code they reach is safe Rust (the workspace forbids `unsafe` outside
# crates/io/src/sys), where fuzzing finds panics and failed assertions,
# not memory errors. Instead the ordinary test build sends seeded random
# requests through the same router input code (crates/server/tests/it/
# any_request.rs), and the range parser has its own tests. The deeper run,
# for a developer's machine:
#   cd fuzz && cargo +nightly fuzz run http_request --features server
fuzz_stage() {
    if ! cargo +nightly --version >/dev/null 2>&1 \
        && ! rustup toolchain install nightly --profile minimal; then
        echo "== WARNING: no nightly toolchain and none can be installed; fuzzing skipped"
        return 0
    fi
    wait_tool cargo-fuzz
    if ! cargo fuzz --version >/dev/null 2>&1; then
        echo "== installing cargo-fuzz"
        cargo install --locked cargo-fuzz
    fi
    local targets target dict each
    # The [[bin]]s that need no feature.
    mapfile -t targets < <(python3 -c '
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    bins = tomllib.load(f)["bin"]
print("\n".join(b["name"] for b in bins if not b.get("required-features")))
' "$ROOT/fuzz/Cargo.toml")
    ((${#targets[@]})) || { echo "== no fuzz targets found"; return 1; }
    (cd "$ROOT/fuzz" && cargo +nightly fuzz build -s none)
    each=$(( ${SPINDLE_FUZZ_SECONDS:-150} / ${#targets[@]} ))
    ((each > 0)) || each=1
    for target in "${targets[@]}"; do
        echo "== fuzzing $target for $each s"
        dict=()
        [[ -f "$ROOT/fuzz/dicts/$target.dict" ]] && dict=("-dict=dicts/$target.dict")
        (cd "$ROOT/fuzz" && cargo +nightly fuzz run -s none "$target" -- \
            -max_total_time="$each" "${dict[@]}")
    done
}
fuzz_stage
