//! `spindle config print-default`: the settings file with every key, its
//! documentation and environment variable above it, and its default (a
//! key without one is shown commented out, with an example).

use super::layer::{KeyDoc, Layer};
use super::Settings;

const HEADER: &str = "\
# Spindle server settings (server.toml).
#
# `spindle serve` reads this file from --config FILE, else
# $SPINDLE_SERVER_CONFIG, else $XDG_CONFIG_HOME/spindle/server.toml
# (~/.config/spindle/server.toml) when it exists. Every key is optional;
# each one is also an environment variable (named above it) and some are
# flags of `spindle serve`. A flag wins over the environment, which wins
# over this file, which wins over the default shown here.
# docs/configuration.md describes every key.
";

const TIERS: &str = "\
# Storage tiers: a hot folder on fast storage and cold copies (folders,
# S3 buckets such as Garage). Off without this section; every key is in
# docs/tiers.md. Not read from the environment.
#
# [tiers]
# mindevcount = 2
# [tiers.hot]
# path = \"/ssd/spindle-hot\"
# budget = \"20GiB\"
# [[tiers.cold]]
# name = \"garage\"
# kind = \"s3\"
# endpoint = \"http://127.0.0.1:3900\"
# bucket = \"music\"
# access_key = \"GK...\"
# secret_key = \"...\"

# Transcoding with ffmpeg: its path, encodes at once, the cache, and rules
# per user and client; every key is in docs/transcoding.md. Not read from
# the environment.
#
# [transcode]
# ffmpeg = \"/usr/bin/ffmpeg\"
# max_concurrent = 4
# cache_budget = \"2GiB\"
# [[transcode.rule]]
# client = \"Symfonium\"
# format = \"opus\"
# bitrate = 160
";

/// The documented default settings file.
pub fn default_file() -> String {
    render(&Settings::default().to_layer())
}

/// `l` as a documented settings file: every key, set ones as values,
/// unset ones commented out with their example.
pub fn render(l: &Layer) -> String {
    let table = toml::Value::try_from(l)
        .ok()
        .and_then(|v| v.as_table().cloned())
        .unwrap_or_default();
    let mut out = String::from(HEADER);
    let mut section = None;
    for k in Layer::keys() {
        if section != Some(k.section) {
            section = Some(k.section);
            if !k.section.is_empty() {
                out.push_str(&format!("\n[{}]\n", k.section));
            }
        }
        let value = if k.section.is_empty() {
            table.get(k.key)
        } else {
            table.get(k.section).and_then(|s| s.get(k.key))
        };
        key(&mut out, &k, value);
    }
    out.push('\n');
    out.push_str(TIERS);
    out
}

fn key(out: &mut String, k: &KeyDoc, value: Option<&toml::Value>) {
    out.push('\n');
    for line in k.doc.lines() {
        out.push('#');
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!("# Environment: {}\n", k.env_var()));
    match value {
        Some(v) => out.push_str(&format!("{} = {v}\n", k.key)),
        None => out.push_str(&format!("# {} = {}\n", k.key, k.example)),
    }
}
