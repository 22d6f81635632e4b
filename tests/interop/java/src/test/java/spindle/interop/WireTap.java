package spindle.interop;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps the raw answers the library received. The library logs every
 * request and answer through Feign at its FULL level (a line
 * "[Client#method] ---> GET URL HTTP/1.1", later the body on a line of
 * its own); this appender pairs each XML body with the request it answers.
 */
public class WireTap extends AppenderBase<ILoggingEvent> {
    /** One exchange: the method the library called and the raw body. */
    public record Exchange(String request, String body) {}

    private static final Pattern LINE = Pattern.compile("^\\[([^\\]]+)\\] (.*)$", Pattern.DOTALL);
    private static final List<Exchange> SEEN = new ArrayList<>();
    private static String lastRequest = "?";

    @Override
    protected void append(ILoggingEvent event) {
        Matcher m = LINE.matcher(event.getFormattedMessage());
        if (!m.matches()) {
            return;
        }
        String text = m.group(2);
        synchronized (SEEN) {
            if (text.startsWith("---> ") && !text.startsWith("---> END")) {
                // "GET http://host/rest/getAlbum?u=...&t=...&id=... HTTP/1.1":
                // keep the method and its own parameters, not the auth.
                lastRequest = m.group(1) + " " + text.replaceAll("[?&](u|s|t|v|c|f)=[^&\\s]*", "");
            } else if (text.startsWith("<") && !text.startsWith("<---")) {
                SEEN.add(new Exchange(lastRequest, text));
            }
        }
    }

    /** The exchanges seen since the last call, oldest first. */
    public static List<Exchange> drain() {
        synchronized (SEEN) {
            List<Exchange> out = new ArrayList<>(SEEN);
            SEEN.clear();
            return out;
        }
    }
}
