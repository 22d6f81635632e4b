# Docs: every relative link and #anchor in README.md, ARCHITECTURE.md and
# docs/ resolves and every docs/ page is in the book's table of contents
# (scripts/check-doc-links.py), and the user guide (docs/book.toml, pages
# ordered by docs/SUMMARY.md) builds with mdBook into target/book without a
# warning or an error. Installs mdBook from crates.io, without its optional
# features, only when it is missing.
python3 "$ROOT/scripts/check-doc-links.py"
wait_tool mdbook
if ! mdbook --version >/dev/null 2>&1; then
    echo "== installing mdbook"
    cargo install --locked mdbook --no-default-features
fi
# mdBook has no switch that makes warnings fatal, so its log is searched.
mkdir -p "$ROOT/target"
out=$(mktemp "$ROOT/target/mdbook-ci.XXXXXX")
mdbook build "$ROOT/docs" 2>&1 | tee "$out"
if grep -Eq 'WARN|ERROR' "$out"; then
    echo "== mdbook build printed warnings or errors" >&2
    rm -f "$out"
    exit 1
fi
rm -f "$out"
echo "== docs: links resolve and the book builds"
