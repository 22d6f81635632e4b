use std::collections::HashMap;
use std::path::Path;

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

/// `text` as a settings file in a temporary folder (kept while the
/// folder lives).
pub(super) fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn load_text(text: &str) -> Result<Settings, SettingsError> {
    let (_dir, path) = file(text);
    load(Some(&path), &no_env, Layer::default())
}

#[test]
fn an_unknown_key_is_an_error_naming_the_key_and_its_line() {
    let err = load_text("[server]\nlisten = \"127.0.0.1:1\"\nlisen = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("lisen"), "{err}");
    assert!(err.contains("server.toml"), "{err}");
    let err = load_text("data_dir = \"/d\"\n[sever]\nlisten = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2") && err.contains("sever"), "{err}");
}

#[test]
fn a_value_of_the_wrong_type_is_an_error_naming_the_key_and_its_line() {
    let err = load_text("[limits]\n\nrate_limit = \"lots\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 3") && err.contains("rate_limit"),
        "{err}"
    );
    let err = load_text("[server]\nbase_path = \"music\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 2") && err.contains("must start with '/'"),
        "{err}"
    );
    let err = load_text("[proxy]\ntrusted = [\"10.0.0.0/33\"]\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 2") && err.contains("10.0.0.0/33"),
        "{err}"
    );
    let err = load_text("[server]\nio_engine = \"fast\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2") && err.contains("fast"), "{err}");
}

#[test]
fn a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default() {
    let (_dir, path) = file(
        "[server]\nlisten = \"127.0.0.1:1001\"\nbase_path = \"/file\"\npublic_url = \"http://file.example\"\n\
         [limits]\nrate_limit = 7\n",
    );
    let env: HashMap<&str, &str> = [
        ("SPINDLE_SERVER_LISTEN", "127.0.0.1:1002"),
        ("SPINDLE_SERVER_BASE_PATH", "/env"),
    ]
    .into();
    let env = move |k: &str| env.get(k).map(|v| (*v).to_owned());
    let mut flags = Layer::default();
    flags.server.listen = Some("127.0.0.1:1003".into());
    let s = load(Some(&path), &env, flags).unwrap();
    assert_eq!(s.listen, "127.0.0.1:1003", "flag over env and file");
    assert_eq!(s.http.base_path, "/env", "env over file");
    assert_eq!(
        s.http.public_url.as_deref(),
        Some("http://file.example"),
        "file over default"
    );
    assert_eq!(s.http.rate_limit, 7);
    assert_eq!(s.http.max_body, Config::default().max_body, "default");
    assert_eq!(s.file.as_deref(), Some(path.as_path()));
}

#[test]
fn environment_values_are_read_as_toml_strings_or_comma_lists() {
    let env: HashMap<&str, &str> = [
        ("SPINDLE_SERVER_MUSIC", "/a, /b"),
        ("SPINDLE_PROXY_TRUSTED", "[\"10.0.0.0/8\", \"::1\"]"),
        ("SPINDLE_LIMITS_RATE_LIMIT", "12"),
        ("SPINDLE_LIMITS_MAX_BODY", "1MiB"),
        ("SPINDLE_LOG_FORMAT", "json"),
        ("SPINDLE_DATA_DIR", "/data"),
        ("SPINDLE_TLS_CERT", ""),
    ]
    .into();
    let env = move |k: &str| env.get(k).map(|v| (*v).to_owned());
    let s = load(None, &env, Layer::default()).unwrap();
    assert_eq!(s.music, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    assert_eq!(s.http.proxy.trusted.len(), 2);
    assert_eq!(s.http.rate_limit, 12);
    assert_eq!(s.http.max_body, 1 << 20);
    assert_eq!(s.log_format, LogFormat::Json);
    assert_eq!(s.data_dir.as_deref(), Some(Path::new("/data")));
    assert!(s.tls.is_none(), "an empty variable is unset");
}

#[test]
fn a_bad_environment_value_is_an_error_naming_the_variable() {
    let env = |k: &str| (k == "SPINDLE_LIMITS_RATE_LIMIT").then(|| "many".to_owned());
    let err = load(None, &env, Layer::default()).unwrap_err().to_string();
    assert!(err.contains("SPINDLE_LIMITS_RATE_LIMIT=\"many\""), "{err}");
    let env = |k: &str| (k == "SPINDLE_PROXY_TRUSTED").then(|| "10.0.0.1, nope".to_owned());
    let err = load(None, &env, Layer::default()).unwrap_err().to_string();
    assert!(
        err.contains("SPINDLE_PROXY_TRUSTED") && err.contains("nope"),
        "{err}"
    );
}

#[test]
fn the_default_file_documents_every_key_and_reads_back_as_the_defaults() {
    let text = default_file();
    for k in Layer::keys() {
        assert!(
            text.contains(&format!("# Environment: {}\n", k.env_var())),
            "{} has no environment line",
            k.key
        );
        let set = format!("\n{} = ", k.key);
        let example = format!("\n# {} = {}", k.key, k.example);
        assert!(
            text.contains(&set) || text.contains(&example),
            "{} is not in the default file",
            k.key
        );
    }
    let parsed = parse_file(&text, Path::new("default.toml")).unwrap();
    let s = Settings::resolve(parsed).unwrap();
    assert_eq!(s.to_layer(), Settings::default().to_layer());
    // The commented examples are valid values too.
    let uncommented: String = text
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(kv)
                if Layer::keys()
                    .iter()
                    .any(|k| kv == format!("{} = {}", k.key, k.example)) =>
            {
                kv
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
        // A user header needs a trusted proxy.
        .replace("\ntrusted = []", "\ntrusted = [\"127.0.0.1\"]");
    let all = parse_file(&uncommented, Path::new("examples.toml")).unwrap();
    let s = Settings::resolve(all).unwrap();
    assert!(s.tls.is_some() && s.http.proxy.user_header.is_some());
    assert_eq!(
        s.http.public_url.as_deref(),
        Some("https://music.example.org")
    );
}

#[test]
fn tls_needs_both_files_and_a_user_header_needs_trusted_proxies() {
    let err = load_text("[tls]\ncert = \"/c.pem\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("[tls] cert is set but key is not"), "{err}");
    let err = load_text("[proxy]\nuser_header = \"Remote-User\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("trusted is empty"), "{err}");
}

#[test]
fn the_tiers_section_goes_to_the_tiers_and_is_checked_there() {
    let s = load_text("[tiers]\nmindevcount = 1\n").unwrap();
    assert_eq!(s.tiers.map(|t| t.mindevcount), Some(1));
    let err = load_text("[tiers]\nmindevcont = 3\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("mindevcont"), "{err}");
    assert!(load_text("").unwrap().tiers.is_none());
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let err = load(
        Some(Path::new("/nonexistent/server.toml")),
        &no_env,
        Layer::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/nonexistent/server.toml"), "{err}");
}

#[test]
fn the_transcode_section_goes_to_the_transcoder_and_its_cache_into_the_data_dir() {
    let s = load_text("[transcode]\nffmpeg = \"/opt/ffmpeg\"\n").unwrap();
    assert_eq!(s.http.transcode.ffmpeg, PathBuf::from("/opt/ffmpeg"));
    let c = s.server_config(Path::new("/d"), Vec::new());
    assert_eq!(
        c.http.transcode.cache_dir,
        Some(PathBuf::from("/d").join(crate::transcode::CACHE_DIR))
    );
    let err = load_text("[transcode]\nfmpeg = 1\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("fmpeg"), "{err}");
}

#[test]
fn ignored_articles_come_from_the_library_section() {
    let s = load_text("[library]\nignored_articles = [\"Die\"]\n").unwrap();
    assert_eq!(s.http.ignored_articles, vec!["Die".to_owned()]);
}
