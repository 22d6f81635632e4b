"""Spindle's Subsonic API through a Java client library from Maven Central
(net.beardbot:subsonic-client, JAXB over the XML answers): this starts a
fresh `spindle serve --music DIR` over test_subsonic.py's corpus (FLAC made
with sox, tagged with mutagen, one embedded cover), makes the accounts with
the CLI, and runs the JUnit 5 tests of tests/interop/java/ with
`mvn -B -q test` against it. Those assert what the library parsed and check
every raw answer it received against the Subsonic schema shipped in its
jar, so a value Python and JavaScript pass over fails here.

Needs mvn and a JDK 17. The first run downloads the pinned artifacts from
Maven Central into the local repository (~/.m2 unless SPINDLE_MVN_ARGS says
otherwise, e.g. "-o -Dmaven.repo.local=target/m2"); later ones use it.
Run by scripts/ci.d/80-server.sh (SPINDLE_SUBSONIC_TESTS=1)."""

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import music_server

if not os.environ.get("SPINDLE_SUBSONIC_TESTS"):
    pytest.skip("run by scripts/ci.d/80-server.sh (set SPINDLE_SUBSONIC_TESTS=1)",
                allow_module_level=True)
if not (shutil.which("mvn") and shutil.which("java")):
    pytest.skip("mvn and java are not installed", allow_module_level=True)

# The corpus, and the PNG embedded in it, are test_subsonic.py's.
from test_subsonic import PASSWORD, PNG, make_corpus  # noqa: E402

JAVA = Path(__file__).resolve().parent / "java"


@pytest.fixture(scope="module")
def srv():
    with tempfile.TemporaryDirectory() as music:
        make_corpus(music)
        with music_server(music, PASSWORD, users=("ann", "bob")) as s:
            yield s


def test_the_java_library_parses_every_answer_and_each_fits_the_schema(srv):
    env = dict(
        os.environ,
        SPINDLE_URL=srv.base,
        SPINDLE_USER="ann",
        SPINDLE_PASSWORD=PASSWORD,
        SPINDLE_MUSIC=str(srv.music),
        SPINDLE_COVER_HEX=PNG.hex(),
        # The library streams MP3 at 192 kbit/s unless told otherwise.
        SPINDLE_TRANSCODE="1" if shutil.which("ffmpeg") else "0",
    )
    extra = shlex.split(os.environ.get("SPINDLE_MVN_ARGS", ""))
    r = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(JAVA / "pom.xml"), *extra, "test"],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert r.returncode == 0, f"mvn test failed:\n{r.stdout[-30000:]}\n{r.stderr[-5000:]}"
    reports = list((JAVA / "target" / "surefire-reports").glob("TEST-*.xml"))
    ran = sum(int(p.read_text().split('tests="', 1)[1].split('"', 1)[0]) for p in reports)
    assert ran >= 10, f"surefire ran {ran} tests"
