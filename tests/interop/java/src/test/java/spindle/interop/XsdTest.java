package spindle.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The checker itself: it passes a valid answer and fails each kind of fault. */
class XsdTest {
    private static final String HEAD = "<?xml version='1.0' encoding='UTF-8'?>"
            + "<subsonic-response xmlns='http://subsonic.org/restapi' status='ok'"
            + " version='1.16.1' type='spindle' serverVersion='0.1.0' openSubsonic='true'>";
    private static final String TAIL = "</subsonic-response>";

    private static String song(String attrs) {
        return HEAD + "<song id='1' isDir='false' title='T' created='2026-01-02T03:04:05.000Z'"
                + " duration='2' bitDepth='16' mediaType='song' " + attrs + ">"
                + "<genres name='Pop'/><replayGain trackGain='1.0'/></song>" + TAIL;
    }

    private static List<String> problems(String xml) throws Exception {
        return Xsd.problems(xml);
    }

    @Test
    void aValidAnswerWithOpenSubsonicAdditionsPasses() throws Exception {
        assertEquals(List.of(), problems(song("")));
        assertEquals(List.of(), problems(HEAD + "<album id='a' name='N' title='N' songCount='1'"
                + " duration='2' created='2026-01-02T03:04:05Z' isCompilation='false'>"
                + "<artists id='x' name='y'/><song id='1' isDir='false' title='T'/></album>" + TAIL));
    }

    @Test
    void eachFaultIsFound() throws Exception {
        // A wrong type, an unknown attribute, a missing required one, a
        // date the library's adapter cannot read, an unknown element, a
        // value outside an enumeration, not XML at all.
        for (String bad : List.of(
                song("track='one'"),
                song("colour='red'"),
                HEAD + "<song id='1' title='T'/>" + TAIL,
                song("starred='yesterday'"),
                HEAD + "<song id='1' isDir='false' title='T'><lyrics/></song>" + TAIL,
                song("type='film'"),
                "{'subsonic-response': {}}")) {
            assertTrue(!problems(bad).isEmpty(), "no problem found in " + bad);
        }
    }
}
