//! Users and their Subsonic roles: `getUser`, `getUsers`, `createUser`,
//! `updateUser`, `deleteUser`, `changePassword`. The store and its rules
//! (the first user administers, the last administrator stays) are in
//! [`crate::accounts`]. A user reads their own record and changes their
//! own password (with the settings role); everything else needs an
//! administrator, else error 50.

use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::accounts::{AccountError, Profile, Roles};

/// Error 50 unless the caller is an administrator.
pub(crate) fn require_admin(c: &Ctx, what: &str) -> Result<(), SubsonicError> {
    if c.state.accounts.is_admin(&c.user) {
        Ok(())
    } else {
        Err(SubsonicError::NotAuthorized(format!(
            "Only an administrator may {what}"
        )))
    }
}

fn account_fail(e: AccountError) -> SubsonicError {
    match e {
        AccountError::NoSuchUser(_) => SubsonicError::NotFound("User"),
        AccountError::EmptyPassword => SubsonicError::Missing("password"),
        e => SubsonicError::Refused(e.to_string()),
    }
}

/// A password parameter, plain or `enc:` and hex.
fn password_param(c: &Ctx, name: &str) -> Result<Option<String>, SubsonicError> {
    let Some(p) = c.p.nonempty(name) else {
        return Ok(None);
    };
    match p.strip_prefix("enc:") {
        None => Ok(Some(p.to_owned())),
        Some(hex) => crate::accounts::unhex(hex)
            .and_then(|b| String::from_utf8(b).ok())
            .map(Some)
            .ok_or_else(|| {
                SubsonicError::BadValue(format!("The {name} after enc: is not hex of UTF-8 text"))
            }),
    }
}

/// Sets every role named in the request, keeping the others.
fn read_roles(c: &Ctx, mut r: Roles) -> Result<Roles, SubsonicError> {
    let fields: [(&str, &mut bool); 9] = [
        ("adminRole", &mut r.admin),
        ("settingsRole", &mut r.settings),
        ("downloadRole", &mut r.download),
        ("uploadRole", &mut r.upload),
        ("playlistRole", &mut r.playlist),
        ("coverArtRole", &mut r.cover_art),
        ("commentRole", &mut r.comment),
        ("streamRole", &mut r.stream),
        ("shareRole", &mut r.share),
    ];
    for (name, field) in fields {
        if let Some(v) = c.flag(name)? {
            *field = v;
        }
    }
    Ok(r)
}

/// The repeated `musicFolderId`, checked against the music folders;
/// `None` when absent.
fn read_folders(c: &Ctx) -> Result<Option<Vec<u32>>, SubsonicError> {
    let given = c.all("musicFolderId");
    if given.is_empty() {
        return Ok(None);
    }
    let n = c.state.music.roots().len();
    given
        .into_iter()
        .map(|v| {
            v.parse::<u32>()
                .ok()
                .filter(|&id| id >= 1 && id as usize <= n)
                .ok_or(SubsonicError::NotFound("Music folder"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn read_bit_rate(c: &Ctx) -> Result<Option<u32>, SubsonicError> {
    c.int("maxBitRate")?
        .map(|b| {
            u32::try_from(b)
                .map_err(|_| SubsonicError::BadValue(format!("maxBitRate {b} is not a bit rate")))
        })
        .transpose()
}

fn user_node(c: &Ctx, name: &str, p: &Profile) -> Node {
    let r = p.roles.effective();
    let folders = if p.folders.is_empty() {
        (1..=c.state.music.roots().len() as i64).collect()
    } else {
        p.folders.iter().map(|&f| i64::from(f)).collect()
    };
    Node::new("user")
        .s("username", name)
        .s("email", p.email.clone())
        .b("scrobblingEnabled", true)
        .i("maxBitRate", i64::from(p.max_bit_rate))
        .b("adminRole", r.admin)
        .b("settingsRole", r.settings)
        .b("downloadRole", r.download)
        .b("uploadRole", r.upload)
        .b("playlistRole", r.playlist)
        .b("coverArtRole", r.cover_art)
        .b("commentRole", r.comment)
        .b("podcastRole", false)
        .b("streamRole", r.stream)
        .b("jukeboxRole", false)
        .b("shareRole", r.share)
        .b("videoConversionRole", false)
        .ints("folder", folders)
}

/// `getUser`: the caller's own record, or (for an administrator) anyone's.
pub(crate) fn get_user(c: &mut Ctx) -> SyncResult {
    let name = c.req("username")?.to_owned();
    if name != c.user {
        require_admin(c, "read another user's record")?;
    }
    let p = c
        .state
        .accounts
        .profile(&name)
        .ok_or(SubsonicError::NotFound("User"))?;
    Ok(Some(user_node(c, &name, &p)))
}

/// `getUsers`: every user (administrators only).
pub(crate) fn get_users(c: &mut Ctx) -> SyncResult {
    require_admin(c, "list the users")?;
    let users = c.state.accounts.list_users();
    let nodes = users.iter().map(|(n, p)| user_node(c, n, p)).collect();
    Ok(Some(Node::new("users").list("user", nodes)))
}

/// `createUser`: `username`, `password`, `email`, the roles (absent ones
/// as the Subsonic API defaults them: settings and stream only) and
/// `musicFolderId` (repeated; none: every folder).
pub(crate) fn create_user(c: &mut Ctx) -> SyncResult {
    require_admin(c, "create users")?;
    let name = c.req("username")?.to_owned();
    let password = password_param(c, "password")?.ok_or(SubsonicError::Missing("password"))?;
    let defaults = Roles {
        admin: false,
        settings: true,
        download: false,
        upload: false,
        playlist: false,
        cover_art: false,
        comment: false,
        stream: true,
        share: false,
    };
    let profile = Profile {
        roles: read_roles(c, defaults)?,
        folders: read_folders(c)?.unwrap_or_default(),
        email: c.p.get("email").unwrap_or("").to_owned(),
        max_bit_rate: read_bit_rate(c)?.unwrap_or(0),
    };
    c.state
        .accounts
        .add_user_with(&name, &password, c.now(), profile)
        .map_err(account_fail)?;
    tracing::info!(user = %name, by = %c.user, "user created");
    Ok(None)
}

/// `updateUser`: changes what the request names (password, email,
/// roles, folders, maxBitRate) and keeps the rest.
pub(crate) fn update_user(c: &mut Ctx) -> SyncResult {
    require_admin(c, "change users")?;
    let name = c.req("username")?.to_owned();
    let mut p = c
        .state
        .accounts
        .profile(&name)
        .ok_or(SubsonicError::NotFound("User"))?;
    p.roles = read_roles(c, p.roles)?;
    if let Some(f) = read_folders(c)? {
        p.folders = f;
    }
    if let Some(e) = c.p.get("email") {
        p.email = e.to_owned();
    }
    if let Some(b) = read_bit_rate(c)? {
        p.max_bit_rate = b;
    }
    let password = password_param(c, "password")?;
    c.state
        .accounts
        .set_profile(&name, p)
        .map_err(account_fail)?;
    if let Some(pw) = password {
        c.state
            .accounts
            .set_password(&name, &pw)
            .map_err(account_fail)?;
    }
    Ok(None)
}

/// `deleteUser`: the account, its tokens and sessions (web ones too), its
/// stars, ratings, playlists, queue, bookmarks and shares
/// ([`crate::AppState::delete_user_everywhere`]). The listening history
/// stays. An administrator cannot delete themselves.
pub(crate) fn delete_user(c: &mut Ctx) -> SyncResult {
    require_admin(c, "delete users")?;
    let name = c.req("username")?.to_owned();
    if name == c.user {
        return Err(SubsonicError::Refused(
            "You cannot delete yourself: ask another administrator".into(),
        ));
    }
    if !c.state.accounts.user_exists(&name) {
        return Err(SubsonicError::NotFound("User"));
    }
    // The account, web sessions, user data and song ratings, as the web
    // admin page deletes a user.
    c.state
        .delete_user_everywhere(&name)
        .map_err(|e| SubsonicError::Internal(format!("Could not delete {name}: {e}")))?;
    tracing::info!(user = %name, by = %c.user, "user deleted");
    Ok(None)
}

/// `changePassword`: a user's own (with the settings role), or anyone's
/// for an administrator.
pub(crate) fn change_password(c: &mut Ctx) -> SyncResult {
    let name = c.req("username")?.to_owned();
    let password = password_param(c, "password")?.ok_or(SubsonicError::Missing("password"))?;
    let admin = c.state.accounts.is_admin(&c.user);
    if name != c.user && !admin {
        return Err(SubsonicError::NotAuthorized(
            "Only an administrator may change another user's password".into(),
        ));
    }
    let settings = c.state.accounts.roles(&c.user).is_some_and(|r| r.settings);
    if !admin && !settings {
        return Err(SubsonicError::NotAuthorized(
            "You may not change your password: ask an administrator for the settings role".into(),
        ));
    }
    c.state
        .accounts
        .set_password(&name, &password)
        .map_err(account_fail)?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::subsonic::testkit::Kit;

    #[tokio::test]
    async fn a_listener_gets_error_50_from_every_admin_method() {
        let k = Kit::new();
        let u = [("username", "ann")];
        assert_eq!(k.code("bob", "getUsers", &[]).await, 50);
        assert_eq!(k.code("bob", "getUser", &u).await, 50);
        assert_eq!(k.code("bob", "deleteUser", &u).await, 50);
        assert_eq!(k.code("bob", "updateUser", &u).await, 50);
        assert_eq!(
            k.code(
                "bob",
                "changePassword",
                &[("username", "ann"), ("password", "x")]
            )
            .await,
            50
        );
        let create = [("username", "cy"), ("password", "x"), ("email", "")];
        assert_eq!(k.code("bob", "createUser", &create).await, 50);
        let own = &k.ok("bob", "getUser", &[("username", "bob")]).await["user"];
        assert_eq!(own["adminRole"], false);
        assert_eq!(
            (own["podcastRole"].as_bool(), own["jukeboxRole"].as_bool()),
            (Some(false), Some(false))
        );
        assert_eq!(
            own["folder"],
            serde_json::json!([1]),
            "no list: every folder"
        );
    }

    #[tokio::test]
    async fn an_administrator_creates_changes_and_deletes_users() {
        let k = Kit::new();
        let users = k.ok("ann", "getUsers", &[]).await;
        let names: Vec<&str> = users["users"]["user"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["username"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ann", "bob"]);
        assert_eq!(
            users["users"]["user"][0]["adminRole"], true,
            "the first user"
        );
        k.ok(
            "ann",
            "createUser",
            &[
                ("username", "cy"),
                ("password", "enc:6379"), // "cy"
                ("email", "cy@example.org"),
                ("downloadRole", "true"),
                ("musicFolderId", "1"),
            ],
        )
        .await;
        assert!(k.state.accounts.check_password("cy", "cy"), "enc: is hex");
        let cy = &k.ok("ann", "getUser", &[("username", "cy")]).await["user"];
        assert_eq!(
            (cy["downloadRole"].as_bool(), cy["shareRole"].as_bool()),
            (Some(true), Some(false))
        );
        assert_eq!(
            (cy["streamRole"].as_bool(), cy["playlistRole"].as_bool()),
            (Some(true), Some(false))
        );
        assert_eq!(cy["email"], "cy@example.org");
        assert_eq!(k.state.accounts.folders_of("cy"), Some(vec![1]));
        let dup = [("username", "cy"), ("password", "x")];
        assert_eq!(k.code("ann", "createUser", &dup).await, 0);
        let bad_folder = [("username", "cy"), ("musicFolderId", "9")];
        assert_eq!(k.code("ann", "updateUser", &bad_folder).await, 70);
        k.ok(
            "ann",
            "updateUser",
            &[
                ("username", "cy"),
                ("shareRole", "true"),
                ("maxBitRate", "128"),
            ],
        )
        .await;
        let cy = &k.ok("ann", "getUser", &[("username", "cy")]).await["user"];
        assert_eq!(
            (cy["shareRole"].as_bool(), cy["downloadRole"].as_bool()),
            (Some(true), Some(true))
        );
        assert_eq!(cy["maxBitRate"], 128);
        let demote = [("username", "ann"), ("adminRole", "false")];
        assert_eq!(
            k.code("ann", "updateUser", &demote).await,
            0,
            "the last administrator"
        );
        assert_eq!(k.code("ann", "deleteUser", &[("username", "ann")]).await, 0);
        k.ok("ann", "deleteUser", &[("username", "cy")]).await;
        assert_eq!(k.code("ann", "getUser", &[("username", "cy")]).await, 70);
        assert_eq!(k.code("ann", "deleteUser", &[("username", "cy")]).await, 70);
    }

    #[tokio::test]
    async fn a_user_changes_their_own_password_and_logs_in_with_it() {
        let k = Kit::new();
        k.ok(
            "bob",
            "changePassword",
            &[("username", "bob"), ("password", "new pw")],
        )
        .await;
        assert_eq!(k.code("bob", "ping", &[]).await, 40, "the old password");
        assert!(k.state.accounts.check_password("bob", "new pw"));
        assert_eq!(
            k.code(
                "ann",
                "changePassword",
                &[("username", "zed"), ("password", "x")]
            )
            .await,
            70
        );
        assert_eq!(
            k.code("ann", "changePassword", &[("username", "bob")])
                .await,
            10
        );
    }
}
