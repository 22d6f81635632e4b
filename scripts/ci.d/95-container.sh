# The container image (Containerfile, docs/configuration.md): podman builds
# its `prebuilt` target from the release binary the earlier stages built
# (no second compile), starts it with a music folder and a data volume,
# waits for the HEALTHCHECK's /healthz, and pings the Subsonic API with a
# user made by `spindle user add` inside the container.
#
# On this CI machine (a container itself, cgroups v1/hybrid, no registry):
# crun refuses hybrid cgroups, so podman runs with runc and cgroupfs;
# rlimits can only be lowered, so each run passes its own; RUN steps build
# with --isolation chroot; and when docker.io cannot be reached, the
# debian:bookworm-slim base is made with mmdebstrap from the Debian mirror
# apt already uses and tagged under that name.
# A subshell: its EXIT trap (the cleanup) is its own, and scripts/test's
# trap (the table of stage times) stays in place.
(
apt_install podman runc mmdebstrap curl
release_build
POD=(podman --runtime runc --cgroup-manager cgroupfs)
BASE=docker.io/library/debian:bookworm-slim
work=$(mktemp -d)
name=spindle-ci-$$
cleanup() {
    "${POD[@]}" rm -f "$name" >/dev/null 2>&1 || true
    "${POD[@]}" volume rm -f "$name-data" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
if ! "${POD[@]}" image exists "$BASE" && ! "${POD[@]}" pull -q "$BASE" >/dev/null 2>&1; then
    echo "== no registry: making $BASE with mmdebstrap"
    mmdebstrap --quiet --variant=minbase bookworm "$work/rootfs.tar" http://deb.debian.org/debian
    "${POD[@]}" import -q "$work/rootfs.tar" "$BASE" >/dev/null
fi
"${POD[@]}" build --isolation chroot --network host --format docker \
    --target prebuilt -t localhost/spindle:ci -f "$ROOT/Containerfile" "$ROOT"
"${POD[@]}" image inspect localhost/spindle:ci --format '{{.Config.User}} {{.Config.Healthcheck.Test}}' \
    | grep -q '^spindle .*healthz' || { echo "image: wrong user or no health check"; exit 1; }
mkdir -p "$work/music"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${POD[@]}" run -d --name "$name" -p "127.0.0.1:$port:4533" \
    --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    -v "$work/music:/music:ro" -v "$name-data:/data" localhost/spindle:ci >/dev/null
for _ in $(seq 120); do
    "${POD[@]}" healthcheck run "$name" >/dev/null 2>&1 && break
    sleep 1
done
"${POD[@]}" healthcheck run "$name" || { "${POD[@]}" logs "$name"; exit 1; }
echo "s3cret horse" | "${POD[@]}" exec -i "$name" spindle user add ann >/dev/null
ping=$(curl -fsS "http://127.0.0.1:$port/rest/ping?u=ann&p=s3cret%20horse&v=1.16.1&c=ci&f=json")
grep -q '"status":"ok"' <<<"$ping" || { echo "ping: $ping"; "${POD[@]}" logs "$name"; exit 1; }
"${POD[@]}" exec "$name" sh -c 'id -un; command -v ffmpeg' | tr '\n' ' '
echo "== container: healthy, ping ok"
)
