#!/usr/bin/env bash
# The cargo-installed tools CI needs, built in the background while the
# stages run (scripts/test starts this at nice 19, so it takes only the
# CPU the stages leave idle: a link step, a test waiting on a server).
# On a machine that has them all this does nothing; on a new machine it
# builds each missing one from crates.io into cargo's bin folder, in the
# order the stages need them, and marks each as done:
#
#   target/ci-tools/<tool>.done    installed (or already there)
#   target/ci-tools/<tool>.failed  the install failed (see its .log)
#
# The stages wait for a tool with `wait_tool` (scripts/test), which
# falls back to installing it itself if this never finished it.
#
#   scripts/ci-tools.sh            # every tool
#   scripts/ci-tools.sh garage     # just these
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
marks="$ROOT/target/ci-tools"
mkdir -p "$marks"
bin="${CARGO_HOME:-$HOME/.cargo}/bin"

# install NAME CHECK-COMMAND INSTALL-COMMAND...
install() {
    local name=$1 check=$2
    shift 2
    if bash -c "$check" >/dev/null 2>&1; then
        touch "$marks/$name.done"
        return 0
    fi
    echo "== ci-tools: building $name"
    if "$@" >"$marks/$name.log" 2>&1; then
        touch "$marks/$name.done"
    else
        touch "$marks/$name.failed"
        echo "== ci-tools: $name failed (target/ci-tools/$name.log)"
    fi
}

tools=("$@")
((${#tools[@]})) || tools=(garage cargo-fuzz cargo-deny mdbook)
for t in "${tools[@]}"; do
    case $t in
        # Only the SQLite metadata engine the tests use: no LMDB, K2V or
        # metrics, which cuts the build by about a third.
        garage) install garage "command -v garage || test -x '$bin/garage'" \
            cargo install garage --locked --quiet --no-default-features \
                --features bundled-libs,sqlite ;;
        cargo-fuzz) install cargo-fuzz "cargo fuzz --version" \
            cargo install --locked --quiet cargo-fuzz ;;
        cargo-deny) install cargo-deny "cargo deny --version" \
            cargo install --locked --quiet cargo-deny ;;
        mdbook) install mdbook "mdbook --version" \
            cargo install --locked --quiet mdbook --no-default-features ;;
        *) echo "== ci-tools: unknown tool $t" >&2 ;;
    esac
done
