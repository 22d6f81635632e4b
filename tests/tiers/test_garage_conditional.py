"""Does Garage honour S3 conditional writes? A probe against a real cluster.

A Spindle cluster (docs/cluster.md) could hold its primary's lease in the
bucket with conditional writes: create the lease object with
`If-None-Match: *` (Amazon S3 answers 412 when it exists) and renew it with
`If-Match: <etag>` (412 when someone else wrote it since). That is only
safe if the store enforces the condition. This test asks a real
three-node Garage cluster (scripts/garage-cluster.sh) each question with
a real S3 client (boto3, SigV4), prints what Amazon S3 documents and what
Garage did, and asserts Garage's behaviour as observed: a Garage upgrade
that changes it fails here loudly, and docs/cluster.md ("Failover") must
be revisited then.

Amazon's behaviour:
https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html

Runs only with SPINDLE_TIERS_TESTS=1 (scripts/ci.d/85-tiers.sh sets it).
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError:  # the fixture fails with a message
    boto3 = None

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "scripts/garage-cluster.sh")

pytestmark = pytest.mark.skipif(
    os.environ.get("SPINDLE_TIERS_TESTS") != "1",
    reason="set SPINDLE_TIERS_TESTS=1 (needs garage)",
)

# case: (what Amazon S3 answers, what Garage answered when this was written)
# Each answer is (HTTP status, whether the stored object changed).
CASES = {
    "If-None-Match: * on an absent key": ((200, True), (200, True)),
    "If-None-Match: * on a present key": ((412, False), (200, True)),
    "If-Match: <current etag>": ((200, True), (200, True)),
    "If-Match: <stale etag>": ((412, False), (200, True)),
    "If-Match: <etag> on an absent key": ((404, False), (200, True)),
    # Not a write: Garage honours the same header on GET, so the header
    # does reach it and is read; PUT simply does not look at it.
    "GET with If-Match: <stale etag>": ((412, False), (412, False)),
}


def garage_bin():
    if os.environ.get("GARAGE_BIN"):
        return os.environ["GARAGE_BIN"]
    found = shutil.which("garage")
    if found:
        return found
    return str(Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin/garage")


@pytest.fixture(scope="module")
def s3():
    if boto3 is None:
        pytest.fail("boto3 is not installed (scripts/ci.d/85-tiers.sh installs it)")

    tmp = tempfile.mkdtemp(prefix="spindle-garage-cond-")
    path = os.path.join(tmp, "garage")
    out = subprocess.run([CLUSTER, "start", path], capture_output=True, text=True)
    try:
        if out.returncode != 0:
            raise AssertionError(f"garage cluster did not start:\n{out.stdout}\n{out.stderr}")
        env = dict(line.split("=", 1) for line in out.stdout.strip().splitlines())
        client = boto3.client(
            "s3",
            endpoint_url=env["GARAGE_ENDPOINTS"].split(",")[0],
            region_name=env["GARAGE_REGION"],
            aws_access_key_id=env["GARAGE_ACCESS_KEY"],
            aws_secret_access_key=env["GARAGE_SECRET_KEY"],
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                          retries={"max_attempts": 1}),
        )
        sent = []
        client.meta.events.register(
            "before-send.s3.*", lambda request, **_: sent.append(dict(request.headers)))
        yield client, env["GARAGE_BUCKET"], sent
    finally:
        subprocess.run([CLUSTER, "stop", path], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def put(client, bucket, key, body, **cond):
    """(status, ETag or None) of a PUT with the given condition."""
    try:
        r = client.put_object(Bucket=bucket, Key=key, Body=body, **cond)
        return r["ResponseMetadata"]["HTTPStatusCode"], r["ETag"]
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], None


def body_of(client, bucket, key):
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return None
        raise


def observe(client, bucket):
    """Ask Garage every question of CASES: {case: (status, changed)}."""
    seen = {}

    key = "probe/if-none-match"
    status, _ = put(client, bucket, key, b"first", IfNoneMatch="*")
    seen["If-None-Match: * on an absent key"] = (status, body_of(client, bucket, key) == b"first")
    status, _ = put(client, bucket, key, b"second", IfNoneMatch="*")
    seen["If-None-Match: * on a present key"] = (status, body_of(client, bucket, key) == b"second")

    key = "probe/if-match"
    _, etag = put(client, bucket, key, b"v1")
    assert etag, "an unconditional PUT gave no ETag"
    status, new_etag = put(client, bucket, key, b"v2", IfMatch=etag)
    seen["If-Match: <current etag>"] = (status, body_of(client, bucket, key) == b"v2")
    # `etag` is stale now (v2 was written, whether or not the condition held).
    stale = etag if new_etag else '"00000000000000000000000000000000"'
    status, _ = put(client, bucket, key, b"v3", IfMatch=stale)
    seen["If-Match: <stale etag>"] = (status, body_of(client, bucket, key) == b"v3")

    key = "probe/if-match-absent"
    status, _ = put(client, bucket, key, b"new", IfMatch=etag)
    seen["If-Match: <etag> on an absent key"] = (status, body_of(client, bucket, key) == b"new")

    try:
        r = client.get_object(Bucket=bucket, Key="probe/if-match", IfMatch=stale)
        status = r["ResponseMetadata"]["HTTPStatusCode"]
    except ClientError as e:
        status = e.response["ResponseMetadata"]["HTTPStatusCode"]
    seen["GET with If-Match: <stale etag>"] = (status, False)
    return seen


def test_garage_conditional_writes_behave_as_recorded(s3):
    client, bucket, sent = s3
    version = subprocess.run([garage_bin(), "--version"], capture_output=True, text=True)
    seen = observe(client, bucket)
    lines = [f"garage: {version.stdout.strip() or version.stderr.strip()}",
             f"{'case':40} {'Amazon S3':>14} {'Garage':>14}"]
    fmt = lambda a: f"{a[0]} {'changed' if a[1] else 'kept'}"
    for case, (aws, _) in CASES.items():
        lines.append(f"{case:40} {fmt(aws):>14} {fmt(seen[case]):>14}")
    print("\n" + "\n".join(lines))
    # The conditions were on the wire, signed, not dropped by the client.
    heads = [{k.lower(): str(v) for k, v in h.items()} for h in sent]
    signed = lambda h, name: name in h.get("authorization", "").lower()
    assert sum(1 for h in heads if signed(h, "if-none-match")) == 2, heads
    assert sum(1 for h in heads if signed(h, "if-match")) >= 4, heads
    want = {case: garage for case, (_, garage) in CASES.items()}
    assert seen == want, (
        "Garage's answer to conditional requests changed; re-read docs/cluster.md "
        "(Failover: the lease) and update CASES.\n" + "\n".join(lines))
