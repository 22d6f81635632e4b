package spindle.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.InputStream;
import java.net.HttpURLConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import net.beardbot.subsonic.client.Subsonic;
import net.beardbot.subsonic.client.SubsonicPreferences;
import net.beardbot.subsonic.client.api.lists.AlbumListParams;
import net.beardbot.subsonic.client.api.lists.AlbumListType;
import net.beardbot.subsonic.client.api.media.MediaStream;
import net.beardbot.subsonic.client.api.media.StreamParams;
import net.beardbot.subsonic.client.api.search.SearchParams;
import net.beardbot.subsonic.client.base.SubsonicException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.subsonic.restapi.AlbumID3;
import org.subsonic.restapi.AlbumWithSongsID3;
import org.subsonic.restapi.ArtistID3;
import org.subsonic.restapi.ArtistWithAlbumsID3;
import org.subsonic.restapi.Child;
import org.subsonic.restapi.ErrorCode;
import org.subsonic.restapi.IndexID3;
import org.subsonic.restapi.MediaType;
import org.subsonic.restapi.MusicFolder;
import org.subsonic.restapi.NowPlayingEntry;
import org.subsonic.restapi.Playlist;
import org.subsonic.restapi.PlaylistWithSongs;
import org.subsonic.restapi.SearchResult3;
import org.subsonic.restapi.Starred2;

/**
 * Spindle's Subsonic API through net.beardbot:subsonic-client, a Java
 * client whose classes JAXB fills from the XML answers. The server, its
 * accounts and its music folder come from tests/interop/test_java_client.py
 * through SPINDLE_* variables; the corpus is test_subsonic.py's.
 *
 * Each test asserts what the library parsed (JAXB leaves a field it could
 * not parse null, so every field looked at is checked), and after each test
 * every raw answer the library received is checked against the Subsonic
 * schema (Xsd).
 */
class SubsonicClientTest {
    private static Subsonic client;
    private static Path music;
    private static String user;

    @BeforeAll
    static void connect() {
        String url = System.getenv("SPINDLE_URL");
        // Not a skip: a run without a server must not pass.
        assertNotNull(url, "SPINDLE_URL is unset: tests/interop/test_java_client.py starts "
                + "the server and runs these tests");
        user = System.getenv("SPINDLE_USER");
        music = Path.of(System.getenv("SPINDLE_MUSIC"));
        client = connect(url, user, System.getenv("SPINDLE_PASSWORD"));
        WireTap.drain();
    }

    private static Subsonic connect(String url, String name, String password) {
        SubsonicPreferences p = new SubsonicPreferences(url, name, password);
        p.setClientName("spindle-java-interop");
        return new Subsonic(p);
    }

    @AfterEach
    void everyRawAnswerFitsTheSchema() throws Exception {
        assertTrue(Xsd.available(), "the library's jar has no subsonic-rest-api-1.15.0.xsd");
        List<WireTap.Exchange> seen = WireTap.drain();
        assertFalse(seen.isEmpty(), "no raw answer was captured: is logback-test.xml in effect?");
        StringBuilder bad = new StringBuilder();
        for (WireTap.Exchange x : seen) {
            List<String> problems = Xsd.problems(x.body());
            if (!problems.isEmpty()) {
                bad.append(x.request()).append("\n  ").append(String.join("\n  ", problems))
                        .append("\n  answer: ").append(x.body()).append('\n');
            }
        }
        if (bad.length() > 0) {
            fail("answers outside the Subsonic schema:\n" + bad);
        }
    }

    // ---- helpers ---------------------------------------------------------

    private static <T> T waitFor(String what, Supplier<Optional<T>> probe) throws InterruptedException {
        // Play counts may take the catalog's refresh interval (10 s) to show.
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            Optional<T> got = probe.get();
            if (got.isPresent()) {
                return got.get();
            }
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    private static Child song(String title) {
        SearchResult3 r = client.searching().search3(title,
                SearchParams.create().artistCount(0).albumCount(0).songCount(10));
        List<Child> hits = r.getSongs().stream().filter(s -> title.equals(s.getTitle())).toList();
        assertEquals(1, hits.size(), "search3 for " + title + ": " + r.getSongs());
        return hits.get(0);
    }

    private static ArtistID3 artist(String name) {
        return client.browsing().getArtists().stream()
                .flatMap(i -> i.getArtists().stream())
                .filter(a -> name.equals(a.getName()))
                .findFirst().orElseThrow(() -> new AssertionError("no artist " + name));
    }

    private static byte[] read(MediaStream m) throws Exception {
        try (InputStream in = m.getInputStream()) {
            return in.readAllBytes();
        }
    }

    /** The song's file, found by the path the library parsed. */
    private static byte[] file(Child s) throws Exception {
        assertNotNull(s.getPath(), "path of " + s.getTitle());
        return Files.readAllBytes(music.resolve(s.getPath()));
    }

    private static void assertSongFields(Child s, String album, String artist, int track, int year,
                                         String genre) throws Exception {
        assertNotNull(s.getId());
        assertFalse(s.isDir());
        assertEquals(album, s.getAlbum());
        assertEquals(artist, s.getArtist());
        assertEquals(track, s.getTrack());
        assertEquals(year, s.getYear());
        assertEquals(genre, s.getGenre());
        assertEquals("flac", s.getSuffix());
        assertEquals("audio/flac", s.getContentType());
        assertEquals(MediaType.MUSIC, s.getType());
        assertEquals(Boolean.FALSE, s.isVideo());
        assertNotNull(s.getDuration(), "duration");
        assertTrue(s.getDuration() >= 1, "duration " + s.getDuration());
        assertNotNull(s.getBitRate(), "bitRate");
        assertNotNull(s.getCreated(), "created (xs:dateTime)");
        assertNotNull(s.getAlbumId(), "albumId");
        assertNotNull(s.getArtistId(), "artistId");
        assertNotNull(s.getCoverArtId(), "coverArt");
        assertNotNull(s.getPlayCount(), "playCount");
        assertEquals((long) file(s).length, s.getSize(), "size is the file's");
    }

    // ---- the steps -------------------------------------------------------

    @Test
    void pingWithTokenAuthAndTheVersionNegotiation() {
        client.system().ping();
        assertTrue(client.testConnection());
        // Spindle speaks 1.16.1, newer than the library's 1.15.0: it keeps its own.
        assertEquals("1.15.0", client.getApiVersion().getVersionString());
    }

    @Test
    void aWrongPasswordIsErrorForty() {
        Subsonic wrong = connect(System.getenv("SPINDLE_URL"), user, "not the password");
        SubsonicException e = assertThrows(SubsonicException.class, () -> wrong.system().ping());
        assertEquals(ErrorCode.WRONG_USERNAME_OR_PASSWORD, e.getErrorCode());
        assertNotNull(e.getErrorMessage());
        assertFalse(wrong.testConnection());
    }

    @Test
    void musicFoldersArtistsAlbumsAndSongs() throws Exception {
        List<MusicFolder> folders = client.browsing().getMusicFolders();
        assertEquals(1, folders.size());
        assertTrue(folders.get(0).getId() > 0, "folder id " + folders.get(0).getId());
        assertEquals(music.getFileName().toString(), folders.get(0).getName());

        List<IndexID3> index = client.browsing().getArtists();
        assertEquals(List.of("A", "B"), index.stream().map(IndexID3::getName).toList());
        assertEquals(List.of("Aurora Test", "Björk Sample"),
                index.stream().flatMap(i -> i.getArtists().stream()).map(ArtistID3::getName).toList());
        ArtistID3 aurora = index.get(0).getArtists().get(0);
        assertEquals(2, aurora.getAlbumCount());
        assertNotNull(aurora.getCoverArtId());
        assertNull(aurora.getStarred());

        ArtistWithAlbumsID3 art = client.browsing().getArtist(aurora.getId());
        assertEquals("Aurora Test", art.getName());
        assertEquals(2, art.getAlbumCount());
        assertEquals(List.of("Northern Lights", "Southern Dark"),
                art.getAlbums().stream().map(AlbumID3::getName).sorted().toList());
        AlbumID3 nl = art.getAlbums().stream()
                .filter(a -> a.getName().equals("Northern Lights")).findFirst().orElseThrow();
        assertEquals("Aurora Test", nl.getArtist());
        assertEquals(aurora.getId(), nl.getArtistId());
        assertEquals(2, nl.getSongCount());
        assertTrue(nl.getDuration() >= 2, "album duration " + nl.getDuration());
        assertEquals(2015, nl.getYear());
        assertEquals("Pop", nl.getGenre());
        assertNotNull(nl.getCreated(), "album created (xs:dateTime)");
        assertNotNull(nl.getCoverArtId());

        AlbumWithSongsID3 album = client.browsing().getAlbum(nl.getId());
        assertEquals(nl.getId(), album.getId());
        assertEquals("Northern Lights", album.getName());
        assertEquals(List.of("Runaway Signal", "Half the World"),
                album.getSongs().stream().map(Child::getTitle).toList());
        int track = 1;
        for (Child s : album.getSongs()) {
            assertSongFields(s, "Northern Lights", "Aurora Test", track++, 2015, "Pop");
            assertEquals(nl.getId(), s.getAlbumId());
            assertEquals(aurora.getId(), s.getArtistId());
        }
        int sum = album.getSongs().stream().mapToInt(Child::getDuration).sum();
        assertEquals(sum, album.getDuration(), "album duration is its songs'");

        Child first = album.getSongs().get(0);
        Child one = client.browsing().getSong(first.getId());
        assertEquals(first.getId(), one.getId());
        assertEquals("Runaway Signal", one.getTitle());
        assertSongFields(one, "Northern Lights", "Aurora Test", 1, 2015, "Pop");

        // The folder view and genres, as older clients browse.
        assertEquals(List.of("A", "B"),
                client.browsing().getIndexes().stream().map(i -> i.getName()).toList());
        var genres = client.browsing().getGenres();
        var pop = genres.stream().filter(g -> "Pop".equals(g.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("no genre Pop in " + genres.size()));
        assertEquals(3, pop.getSongCount());
        assertEquals(2, pop.getAlbumCount());
    }

    @Test
    void search3FindsArtistsAlbumsAndSongs() throws Exception {
        SearchResult3 r = client.searching().search3("Murder Song");
        assertEquals(List.of("Murder Song"), r.getSongs().stream().map(Child::getTitle).toList());
        assertSongFields(r.getSongs().get(0), "Southern Dark", "Aurora Test", 1, 2016, "Pop");
        // Non-ASCII words go through the library's query encoding.
        r = client.searching().search3("jóga");
        assertEquals(List.of("Jóga"), r.getSongs().stream().map(Child::getTitle).toList());
        r = client.searching().search3("Homogenic");
        assertEquals(List.of("Homogenic Tones"), r.getAlbums().stream().map(AlbumID3::getName).toList());
        AlbumID3 ht = r.getAlbums().get(0);
        assertEquals(2, ht.getSongCount());
        assertEquals(1997, ht.getYear());
        r = client.searching().search3("Björk");
        assertEquals(List.of("Björk Sample"), r.getArtists().stream().map(ArtistID3::getName).toList());
        assertEquals(1, r.getArtists().get(0).getAlbumCount());
        // Paging through everything with the empty query, as sync clients do.
        SearchResult3 p1 = client.searching().search3("",
                SearchParams.create().artistCount(0).albumCount(0).songCount(3).songOffset(0));
        SearchResult3 p2 = client.searching().search3("",
                SearchParams.create().artistCount(0).albumCount(0).songCount(3).songOffset(3));
        assertEquals(3, p1.getSongs().size());
        assertEquals(2, p2.getSongs().size());
    }

    @Test
    void streamSendsTheFileByteForByteAndHonoursARange() throws Exception {
        Child s = song("Murder Song");
        byte[] want = file(s);
        MediaStream raw = client.media().stream(s.getId(), StreamParams.create().format("raw"));
        assertArrayEquals(want, read(raw));
        assertEquals(want.length, raw.getContentLength());
        // The library sends no Range header of its own: the same URL (its
        // token auth included) with one.
        HttpURLConnection c = (HttpURLConnection) raw.getUrl().openConnection();
        c.setRequestProperty("Range", "bytes=100-1099");
        try (InputStream in = c.getInputStream()) {
            assertEquals(206, c.getResponseCode());
            assertArrayEquals(java.util.Arrays.copyOfRange(want, 100, 1100), in.readAllBytes());
        }
        assertEquals("bytes 100-1099/" + want.length, c.getHeaderField("Content-Range"));
        // download sends the same bytes.
        assertArrayEquals(want, read(client.media().download(s.getId())));
        // The library's default stream asks for MP3 at 192 kbit/s.
        if ("1".equals(System.getenv("SPINDLE_TRANSCODE"))) {
            byte[] mp3 = read(client.media().stream(s.getId()));
            boolean id3 = mp3.length > 3 && mp3[0] == 'I' && mp3[1] == 'D' && mp3[2] == '3';
            boolean sync = mp3.length > 2 && (mp3[0] & 0xff) == 0xff && (mp3[1] & 0xe0) == 0xe0;
            assertTrue(id3 || sync, "the default stream is not MP3 (" + mp3.length + " bytes)");
        }
        // A stream of no song is the library's DATA_NOT_FOUND.
        SubsonicException e = assertThrows(SubsonicException.class,
                () -> read(client.media().stream("999999", StreamParams.create().format("raw"))));
        assertEquals(ErrorCode.DATA_NOT_FOUND, e.getErrorCode());
    }

    @Test
    void coverArtIsTheEmbeddedPicture() throws Exception {
        Child s = song("Jóga");
        byte[] png = HexFormat.of().parseHex(System.getenv("SPINDLE_COVER_HEX"));
        assertArrayEquals(png, read(client.media().getCoverArt(s.getCoverArtId())));
    }

    @Test
    void scrobbleShowsNowPlayingThenCountsThePlay() throws Exception {
        Child s = song("Half the World");
        long before = s.getPlayCount();
        client.annotation().scrobbleNowPlaying(s.getId());
        NowPlayingEntry e = waitFor("the song in getNowPlaying", () ->
                client.lists().getNowPlaying().stream()
                        .filter(n -> s.getId().equals(n.getId())).findFirst());
        assertEquals(user, e.getUsername());
        assertEquals("Half the World", e.getTitle());
        assertTrue(e.getMinutesAgo() >= 0 && e.getMinutesAgo() <= 1, "minutesAgo " + e.getMinutesAgo());
        assertNotNull(e.getCreated(), "created of the entry");

        client.annotation().scrobble(s.getId(), System.currentTimeMillis());
        long after = waitFor("playCount to grow", () -> {
            long n = client.browsing().getSong(s.getId()).getPlayCount();
            return n > before ? Optional.of(n) : Optional.empty();
        });
        assertEquals(before + 1, after);
        AlbumWithSongsID3 album = client.browsing().getAlbum(s.getAlbumId());
        assertTrue(album.getPlayCount() != null && album.getPlayCount() >= 1,
                "album playCount " + album.getPlayCount());
    }

    @Test
    void starUnstarAndGetStarred2() throws Exception {
        Child s = song("Bachelorette");
        ArtistID3 bjork = artist("Björk Sample");
        client.annotation().star(s.getId());
        client.annotation().starAlbumID3(s.getAlbumId());
        client.annotation().starArtistID3(bjork.getId());

        Starred2 st = client.lists().getStarred2();
        assertEquals(List.of(s.getId()), st.getSongs().stream().map(Child::getId).toList());
        assertEquals(List.of(s.getAlbumId()), st.getAlbums().stream().map(AlbumID3::getId).toList());
        assertEquals(List.of(bjork.getId()), st.getArtists().stream().map(ArtistID3::getId).toList());
        LocalDateTime when = st.getSongs().get(0).getStarred();
        assertNotNull(when, "starred (xs:dateTime) of the song");
        assertNotNull(st.getAlbums().get(0).getStarred(), "starred of the album");
        assertNotNull(st.getArtists().get(0).getStarred(), "starred of the artist");
        assertEquals(when, client.browsing().getSong(s.getId()).getStarred());
        assertNotNull(client.lists().getStarred().getSongs().get(0).getStarred());

        client.annotation().unstar(s.getId());
        client.annotation().unstarAlbumID3(s.getAlbumId());
        client.annotation().unstarArtistID3(bjork.getId());
        st = client.lists().getStarred2();
        assertTrue(st.getSongs().isEmpty() && st.getAlbums().isEmpty() && st.getArtists().isEmpty(),
                "still starred after unstar");
        assertNull(client.browsing().getSong(s.getId()).getStarred());
    }

    @Test
    void createGetAndDeleteAPlaylist() throws Exception {
        Child a = song("Runaway Signal");
        Child b = song("Jóga");
        client.playlists().createPlaylist("Java Mix", b.getId(), a.getId());
        Playlist p = client.playlists().getPlaylists().stream()
                .filter(x -> "Java Mix".equals(x.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("the new playlist is not listed"));
        assertEquals(user, p.getOwner());
        assertEquals(2, p.getSongCount());
        assertNotNull(p.getCreated(), "created (xs:dateTime)");
        assertNotNull(p.getChanged(), "changed (xs:dateTime)");

        PlaylistWithSongs full = client.playlists().getPlaylist(p.getId());
        assertEquals(List.of("Jóga", "Runaway Signal"),
                full.getEntries().stream().map(Child::getTitle).toList());
        assertEquals(full.getEntries().stream().mapToInt(Child::getDuration).sum(), full.getDuration());
        assertEquals(2, full.getSongCount());

        client.playlists().deletePlaylist(p.getId());
        assertTrue(client.playlists().getPlaylists().stream().noneMatch(x -> p.getId().equals(x.getId())));
        SubsonicException e = assertThrows(SubsonicException.class,
                () -> client.playlists().getPlaylist(p.getId()));
        assertEquals(ErrorCode.DATA_NOT_FOUND, e.getErrorCode());
    }

    @Test
    void theOtherReadsTheLibraryOffer() throws Exception {
        assertTrue(client.system().getLicense().isValid());
        // getAlbumList answers Child elements, getAlbumList2 AlbumID3 ones.
        var byName = client.lists().getAlbumList(
                AlbumListParams.create().type(AlbumListType.ALPHABETICAL_BY_NAME).size(50));
        assertEquals(List.of("Homogenic Tones", "Northern Lights", "Southern Dark"),
                byName.getAlbums().stream().map(Child::getTitle).toList());
        assertTrue(byName.getAlbums().stream().allMatch(Child::isDir));
        var byYear = client.lists().getAlbumList2(AlbumListParams.create()
                .type(AlbumListType.BY_YEAR).fromYear(2000).toYear(2020).size(50));
        assertEquals(List.of("Northern Lights", "Southern Dark"),
                byYear.getAlbums().stream().map(AlbumID3::getName).sorted().toList());
        for (AlbumListType t : AlbumListType.values()) {
            var p = AlbumListParams.create().type(t).size(50);
            if (t == AlbumListType.BY_YEAR) {
                p.fromYear(1990).toYear(2020);
            } else if (t == AlbumListType.BY_GENRE) {
                p.genre("Pop");
            }
            client.lists().getAlbumList(p);
            client.lists().getAlbumList2(p);
        }
        // search2 and the folder view: Artist and Child, not the ID3 shapes.
        var r2 = client.searching().search2("Aurora");
        assertEquals(List.of("Aurora Test"), r2.getArtists().stream().map(a -> a.getName()).toList());
        var dir = client.browsing().getMusicDirectory(
                client.browsing().getIndexes().get(0).getArtists().get(0).getId());
        assertEquals("Aurora Test", dir.getName());
        assertEquals(2, dir.getchildren().size());
        assertTrue(dir.getchildren().stream().allMatch(Child::isDir));
        var albumDir = client.browsing().getMusicDirectory(dir.getchildren().get(0).getId());
        assertFalse(albumDir.getchildren().isEmpty());
        assertTrue(albumDir.getchildren().stream().noneMatch(Child::isDir));
        // Infos, the account and the scanner.
        ArtistID3 aurora = artist("Aurora Test");
        // Texts and image URLs are elements in the schema: read from
        // attributes of those names, JAXB would leave them null.
        var info = client.browsing().getArtistInfo2(aurora.getId());
        assertNotNull(info.getBiography(), "artistInfo2 biography");
        assertTrue(info.getLargeImageUrl() != null && info.getLargeImageUrl().contains("/img/"),
                "artistInfo2 largeImageUrl " + info.getLargeImageUrl());
        var ainfo = client.browsing().getAlbumInfo2(
                client.browsing().getArtist(aurora.getId()).getAlbums().get(0).getId());
        assertNotNull(ainfo.getNotes(), "albumInfo notes");
        assertTrue(ainfo.getSmallImageUrl() != null && ainfo.getSmallImageUrl().contains("/img/"),
                "albumInfo smallImageUrl " + ainfo.getSmallImageUrl());
        var me = client.users().getUser(user);
        assertEquals(user, me.getUsername());
        assertTrue(me.isAdminRole(), "the first account administers the server");
        assertTrue(me.isStreamRole());
        assertEquals(List.of(user, "bob"),
                client.users().getAllUsers().stream().map(u -> u.getUsername()).sorted().toList());
        assertNotNull(client.libraryScan().getScanStatus().getCount(), "scan count");
    }
}
