# Fuzzing: each cargo-fuzz target for 30 seconds on nightly, to catch panics
# in the parsers (the pattern parser must survive any UTF-8 input and print
# patterns that parse back to the same tree). Sourced by scripts/test.
fuzz_stage() {
    if ! cargo +nightly --version >/dev/null 2>&1 \
        && ! rustup toolchain install nightly --profile minimal; then
        echo "== WARNING: no nightly toolchain and none can be installed; fuzzing skipped"
        return 0
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
        echo "== installing cargo-fuzz"
        cargo install --locked cargo-fuzz
    fi
    local target dict
    for target in $(cd "$ROOT/fuzz" && cargo fuzz list); do
        echo "== fuzzing $target for 30 s"
        dict=()
        [[ -f "$ROOT/fuzz/dicts/$target.dict" ]] && dict=("-dict=dicts/$target.dict")
        (cd "$ROOT/fuzz" && cargo +nightly fuzz run "$target" -- -max_total_time=30 "${dict[@]}")
    done
}
fuzz_stage
# The store's read_log and read_data_file targets (the log and data file
# decoders, docs/store-format.md) run through the loop above: it fuzzes
# every [[bin]] in fuzz/Cargo.toml for 30 s, with fuzz/dicts/<target>.dict.
