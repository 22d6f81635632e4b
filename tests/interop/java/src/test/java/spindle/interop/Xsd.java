package spindle.interop;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.XMLConstants;
import javax.xml.bind.JAXBContext;
import javax.xml.bind.JAXBException;
import javax.xml.bind.Unmarshaller;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamSource;
import javax.xml.validation.Schema;
import javax.xml.validation.SchemaFactory;
import javax.xml.validation.Validator;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.ErrorHandler;
import org.subsonic.restapi.ObjectFactory;
import org.xml.sax.SAXParseException;

/**
 * Checks a raw answer against the Subsonic REST API schema that ships in
 * the client library's own jar (subsonic-rest-api-1.15.0.xsd, the schema
 * its classes were generated from): every attribute's type, every required
 * attribute and element, enumerations, element order.
 *
 * The schema allows no extra attribute or element, while OpenSubsonic and
 * Subsonic 1.16.1 add some. Those, and only those, are removed before the
 * check; anything else the server adds fails it. The same stripped answer
 * is then read by the library's own JAXB classes with every event counted
 * as a problem: JAXB leaves a value it cannot read (a date its adapter
 * rejects, a number that is not one) null and goes on, and so does the
 * library.
 */
final class Xsd {
    private static final String SCHEMA = "subsonic-rest-api-1.15.0.xsd";

    // The OpenSubsonic additions to Child (song, child, entry, and album
    // where getAlbumList answers Child).
    private static final Set<String> CHILD_ATTRS = Set.of(
            "bitDepth", "samplingRate", "channelCount", "mediaType", "played", "bpm", "comment",
            "sortName", "musicBrainzId", "displayArtist", "displayAlbumArtist", "displayComposer",
            "explicitStatus");
    private static final Set<String> CHILD_ELEMENTS = Set.of(
            "isrc", "genres", "artists", "albumArtists", "contributors", "moods", "replayGain",
            "works", "movements", "groupings");
    // The OpenSubsonic additions to AlbumID3.
    private static final Set<String> ALBUM_ATTRS = Set.of(
            "version", "played", "userRating", "musicBrainzId", "displayArtist", "sortName",
            "isCompilation", "explicitStatus");
    private static final Set<String> ALBUM_ELEMENTS = Set.of(
            "recordLabels", "genres", "artists", "releaseTypes", "moods", "originalReleaseDate",
            "releaseDate", "discTitles");
    // ArtistID3: artistImageUrl is Subsonic 1.16.1, the rest OpenSubsonic.
    private static final Set<String> ARTIST_ATTRS = Set.of(
            "artistImageUrl", "musicBrainzId", "sortName", "disambiguation");
    private static final Set<String> ENTRY_ATTRS = union(CHILD_ATTRS,
            Set.of("state", "positionMs", "playbackRate"));

    // What Spindle adds beyond both, on purpose: an AlbumID3 carries its
    // name as `title` too, and an album given as a Child (getAlbumList,
    // getStarred, search2) carries the AlbumID3 `name` and `songCount`,
    // for clients that read one shape for both. No parser we know rejects
    // an unknown attribute; these are the only ones let through.
    private static final Set<String> SPINDLE_ALBUM_ID3 = Set.of("title");
    private static final Set<String> SPINDLE_ALBUM_CHILD = Set.of("name", "songCount");

    /** Where an `album` element is a Child, not an AlbumID3. */
    private static final Set<String> CHILD_ALBUM_PARENTS = Set.of(
            "albumList", "starred", "searchResult2", "searchResult");

    private static final Map<String, Set<String>> EXTRA_ATTRS = Map.of(
            "subsonic-response", Set.of("type", "serverVersion", "openSubsonic"),
            "error", Set.of("helpUrl"),
            "song", CHILD_ATTRS,
            "child", CHILD_ATTRS,
            "entry", ENTRY_ATTRS,
            "artist", ARTIST_ATTRS,
            "playlist", Set.of("readonly", "validUntil"));
    private static final Map<String, Set<String>> EXTRA_ELEMENTS = Map.of(
            "song", CHILD_ELEMENTS,
            "child", CHILD_ELEMENTS,
            "entry", CHILD_ELEMENTS,
            "artist", Set.of("roles"));

    private static final Schema COMPILED = compile();
    private static final JAXBContext JAXB = context();

    private Xsd() {}

    /** The schema is found: the library ships it. */
    static boolean available() {
        return COMPILED != null;
    }

    /** The problems the schema finds in `xml` (none when it is valid). */
    static List<String> problems(String xml) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        var builder = f.newDocumentBuilder();
        builder.setErrorHandler(new org.xml.sax.helpers.DefaultHandler());
        Document doc;
        try {
            doc = builder.parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
        } catch (SAXParseException e) {
            return List.of("not well-formed XML: " + e.getMessage());
        }
        strip(doc.getDocumentElement());
        List<String> found = new ArrayList<>();
        Validator v = COMPILED.newValidator();
        v.setErrorHandler(new ErrorHandler() {
            @Override public void warning(SAXParseException e) {}
            @Override public void error(SAXParseException e) { found.add(e.getMessage()); }
            @Override public void fatalError(SAXParseException e) { found.add(e.getMessage()); }
        });
        v.validate(new DOMSource(doc));
        // The library's own classes, with every event JAXB would pass over
        // (a value its adapters cannot read, an element it does not know)
        // counted instead.
        Unmarshaller u = JAXB.createUnmarshaller();
        u.setEventHandler(e -> {
            found.add("JAXB: " + e.getMessage());
            return true;
        });
        try {
            u.unmarshal(doc);
        } catch (JAXBException | RuntimeException e) {
            found.add("JAXB: " + e);
        }
        return found;
    }

    private static void strip(Element e) {
        String name = e.getLocalName();
        Set<String> attrs = EXTRA_ATTRS.getOrDefault(name, Set.of());
        Set<String> extra = EXTRA_ELEMENTS.getOrDefault(name, Set.of());
        if (name.equals("album")) {
            boolean child = e.getParentNode() instanceof Element p
                    && CHILD_ALBUM_PARENTS.contains(p.getLocalName());
            attrs = child ? union(CHILD_ATTRS, SPINDLE_ALBUM_CHILD)
                    : union(ALBUM_ATTRS, SPINDLE_ALBUM_ID3);
            extra = child ? CHILD_ELEMENTS : ALBUM_ELEMENTS;
        }
        for (String a : attrs) {
            e.removeAttribute(a);
        }
        List<Element> children = new ArrayList<>();
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element c) {
                children.add(c);
            }
        }
        for (Element c : children) {
            if (extra.contains(c.getLocalName())) {
                e.removeChild(c);
            } else {
                strip(c);
            }
        }
    }

    private static Schema compile() {
        try (InputStream in = Xsd.class.getClassLoader().getResourceAsStream(SCHEMA)) {
            if (in == null) {
                return null;
            }
            SchemaFactory sf = SchemaFactory.newInstance(XMLConstants.W3C_XML_SCHEMA_NS_URI);
            return sf.newSchema(new StreamSource(in, SCHEMA));
        } catch (Exception e) {
            throw new IllegalStateException("the schema in the library's jar does not compile", e);
        }
    }

    private static JAXBContext context() {
        try {
            return JAXBContext.newInstance(ObjectFactory.class);
        } catch (JAXBException e) {
            throw new IllegalStateException("the library's JAXB classes do not load", e);
        }
    }

    private static Set<String> union(Set<String> a, Set<String> b) {
        java.util.HashSet<String> u = new java.util.HashSet<>(a);
        u.addAll(b);
        return Set.copyOf(u);
    }
}
