//! A small S3 client: GET (with `Range`), PUT, HEAD, DELETE and
//! ListObjectsV2, signed with [`sigv4`], over reqwest (already in the
//! build for the scrobbler, so the S3 tier adds two hash crates, not an
//! SDK). Works with any S3-compatible store: Garage (what the tests run),
//! MinIO, Ceph RGW, AWS S3.
//!
//! A device may list several endpoints of one store (every gateway of a
//! Garage cluster): a request goes to the first endpoint not marked down,
//! and an endpoint that fails to connect, answers 5xx or breaks off a
//! body is marked down for a while and the next one is tried.

pub mod client;
pub mod sigv4;

pub use client::{S3Client, S3Error};
