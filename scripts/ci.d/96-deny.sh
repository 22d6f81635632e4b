# Supply chain: cargo-deny checks the licenses, banned or duplicate crates and
# package sources of the locked dependency tree against deny.toml. Installs
# cargo-deny (from crates.io) only when it is missing.
#
# Advisories are left out by default: they need the RustSec database, cloned
# from github.com, and this stage must run with no network beyond crates.io.
# On a machine that reaches GitHub, SPINDLE_DENY_ADVISORIES=1 adds them.
wait_tool cargo-deny
if ! cargo deny --version >/dev/null 2>&1; then
    echo "== installing cargo-deny"
    cargo install --locked cargo-deny
fi
deny_checks=(licenses bans sources)
if [[ "${SPINDLE_DENY_ADVISORIES:-0}" == 1 ]]; then
    deny_checks+=(advisories)
fi
cargo deny --locked check --hide-inclusion-graph "${deny_checks[@]}"
