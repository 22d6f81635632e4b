//! Spindle's storage tiers (seed `003_…`, Last.fm's SSD hot class).
//!
//! Audio lives on cold devices (the music folders, other local folders,
//! S3 buckets); a hot folder on fast storage holds extra copies of the
//! popular tracks, chosen by an admission and eviction policy fed by
//! stream requests and the listening history. Reads pick among the
//! copies by measured latency.
