"""A known listening history for the statistics tests (test_stats.py,
test_review_page.py): (artist, title, UNIX time, album, seconds).

2022: Beta twice. 2023: Alpha 6 (4 on Monday 6 March, the busiest day),
Beta 3, Gamma 1 (at 23:30 UTC on 31 December). In 2023: 10 listens,
1500 seconds (Gamma's has no duration), busiest month March (5), new
artists Alpha and Gamma."""

from datetime import datetime, timezone


def ts(*args):
    return int(datetime(*args, tzinfo=timezone.utc).timestamp())


HISTORY = [
    ("Beta", "b-one", ts(2022, 6, 1, 10), "B1", 100),
    ("Beta", "b-one", ts(2022, 6, 2, 10), "B1", 100),
    *[("Alpha", "a-one", ts(2023, 3, 6, h), "A1", 200) for h in (9, 10, 11, 12)],
    ("Alpha", "a-two", ts(2023, 5, 10, 8), "A1", 200),
    ("Alpha", "a-two", ts(2023, 5, 11, 8), "A1", 200),
    ("Beta", "b-one", ts(2023, 3, 20, 20), "B1", 100),
    ("Beta", "b-one", ts(2023, 7, 1, 20), "B1", 100),
    ("Beta", "b-one", ts(2023, 7, 2, 20), "B1", 100),
    ("Gamma", "g-one", ts(2023, 12, 31, 23, 30), None, None),
]
