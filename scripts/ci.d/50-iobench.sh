# iobench smoke run against real fio: a tiny sweep (2 depths, 1 s, 1 round)
# that must print the table with fio ratios and write the SVG and PNG chart.
apt_install fio
release_build
iobench=(target/release/spindle iobench)
work=$(mktemp -d "$ROOT/target/iobench-ci.XXXXXX")
"${iobench[@]}" "$work" --size 64M --depths 1,8 --engines psync,uring,uring-sqpoll \
    --rw randread,randrw --runtime 1s --rounds 1 --direct --fio \
    --json "$work/iobench.json" --chart "$work/iobench.svg" | tee "$work/out.txt"
grep -q '^rw  *engine  *depth .*fio_iops .*ratio' "$work/out.txt"
grep -Eq '^randrw +uring-sqpoll +8 ' "$work/out.txt"
grep -q 'What the numbers suggest' "$work/out.txt"
grep -q '<svg' "$work/iobench.svg"
head -c 8 "$work/iobench.png" | od -An -c | grep -q 'P   N   G'
grep -q '"fio_version"' "$work/iobench.json"
# Only the chart, JSON and output are left: the test file was removed.
[[ -z $(find "$work" -name 'spindle-iobench-*') ]]
rm -rf "$work"
echo "== iobench smoke run passed"
