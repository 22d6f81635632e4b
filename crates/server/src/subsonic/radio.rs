//! Internet radio stations: `getInternetRadioStations` for every user;
//! `createInternetRadioStation`, `updateInternetRadioStation` and
//! `deleteInternetRadioStation` for administrators. The server only
//! lists them: clients play the stream URL themselves.

use super::admin::require_admin;
use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};
use crate::userdata::Station;

/// The longest URL accepted, in bytes.
pub const MAX_URL: usize = 2_048;
/// The longest station name, in bytes.
pub const MAX_NAME: usize = 256;

/// An http(s) URL within [`MAX_URL`].
fn url(c: &Ctx, name: &'static str, required: bool) -> Result<String, SubsonicError> {
    let v = match c.p.nonempty(name) {
        Some(v) => v.trim(),
        None if required => return Err(SubsonicError::Missing(name)),
        None => return Ok(String::new()),
    };
    let scheme_ok = ["http://", "https://"]
        .iter()
        .any(|s| v.len() > s.len() && v.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s)));
    if !scheme_ok {
        return Err(SubsonicError::BadValue(format!(
            "{name} must be an http:// or https:// URL"
        )));
    }
    if v.len() > MAX_URL || v.chars().any(char::is_whitespace) {
        return Err(SubsonicError::BadValue(format!(
            "{name} must be one URL of at most {MAX_URL} bytes"
        )));
    }
    Ok(v.to_owned())
}

fn station(c: &Ctx) -> Result<Station, SubsonicError> {
    let name = c.req("name")?.trim().to_owned();
    if name.len() > MAX_NAME {
        return Err(SubsonicError::BadValue(format!(
            "The name is over {MAX_NAME} bytes"
        )));
    }
    Ok(Station {
        name,
        stream_url: url(c, "streamUrl", true)?,
        home_page_url: url(c, "homepageUrl", false)?,
    })
}

fn station_id(c: &Ctx) -> Result<u64, SubsonicError> {
    c.req("id")?
        .parse()
        .map_err(|_| SubsonicError::NotFound("Internet radio station"))
}

pub(crate) fn stations(c: &mut Ctx) -> SyncResult {
    let nodes = c
        .state
        .music
        .userdata
        .stations()
        .into_iter()
        .map(|(id, s)| {
            let n = Node::new("internetRadioStation")
                .s("id", id.to_string())
                .s("name", s.name)
                .s("streamUrl", s.stream_url);
            match s.home_page_url.is_empty() {
                true => n,
                false => n.s("homePageUrl", s.home_page_url),
            }
        })
        .collect();
    Ok(Some(
        Node::new("internetRadioStations").list("internetRadioStation", nodes),
    ))
}

pub(crate) fn create(c: &mut Ctx) -> SyncResult {
    require_admin(c, "add internet radio stations")?;
    let s = station(c)?;
    c.state
        .music
        .userdata
        .add_station(s)
        .map_err(SubsonicError::not_saved)?;
    Ok(None)
}

pub(crate) fn update(c: &mut Ctx) -> SyncResult {
    require_admin(c, "change internet radio stations")?;
    let id = station_id(c)?;
    let s = station(c)?;
    if !c
        .state
        .music
        .userdata
        .put_station(id, s)
        .map_err(SubsonicError::not_saved)?
    {
        return Err(SubsonicError::NotFound("Internet radio station"));
    }
    Ok(None)
}

pub(crate) fn delete(c: &mut Ctx) -> SyncResult {
    require_admin(c, "delete internet radio stations")?;
    let id = station_id(c)?;
    if !c
        .state
        .music
        .userdata
        .delete_station(id)
        .map_err(SubsonicError::not_saved)?
    {
        return Err(SubsonicError::NotFound("Internet radio station"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::subsonic::testkit::Kit;

    #[tokio::test]
    async fn administrators_keep_the_stations_everyone_lists() {
        let k = Kit::new();
        let make = [
            ("streamUrl", "https://radio.example/live.mp3"),
            ("name", "Live"),
        ];
        assert_eq!(k.code("bob", "createInternetRadioStation", &make).await, 50);
        k.ok("ann", "createInternetRadioStation", &make).await;
        let list = k.ok("bob", "getInternetRadioStations", &[]).await;
        let s = &list["internetRadioStations"]["internetRadioStation"][0];
        assert_eq!(
            (s["name"].as_str(), s["streamUrl"].as_str()),
            (Some("Live"), Some("https://radio.example/live.mp3"))
        );
        let id = s["id"].as_str().unwrap().to_owned();
        let update = [
            ("id", id.as_str()),
            ("streamUrl", "http://radio.example/2"),
            ("name", "Two"),
            ("homepageUrl", "https://radio.example/"),
        ];
        assert_eq!(
            k.code("bob", "updateInternetRadioStation", &update).await,
            50
        );
        k.ok("ann", "updateInternetRadioStation", &update).await;
        let list = k.ok("ann", "getInternetRadioStations", &[]).await;
        assert_eq!(
            list["internetRadioStations"]["internetRadioStation"][0]["homePageUrl"],
            "https://radio.example/"
        );
        let bad = [("streamUrl", "file:///etc/passwd"), ("name", "x")];
        assert_eq!(k.code("ann", "createInternetRadioStation", &bad).await, 0);
        assert_eq!(
            k.code("ann", "createInternetRadioStation", &[("name", "x")])
                .await,
            10
        );
        k.ok("ann", "deleteInternetRadioStation", &[("id", &id)])
            .await;
        assert_eq!(
            k.code("ann", "deleteInternetRadioStation", &[("id", &id)])
                .await,
            70
        );
    }
}
