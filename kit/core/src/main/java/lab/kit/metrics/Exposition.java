package lab.kit.metrics;

import java.util.Locale;
import java.util.Set;

/**
 * Prometheus text exposition (format 0.0.4), written by hand: the kit adds no metrics library that could clash with
 * the service's own. With a set of sample names (the scrape's {@code ?names=}), only those samples and their
 * families' HELP and TYPE lines are written: PCP's agent then parses a few lines per scrape, not the whole page.
 */
public final class Exposition {
    private final StringBuilder out = new StringBuilder(4096);
    private final Set<String> names;          // null: every sample
    private String family;
    private String familyHead;
    private boolean familyWritten;

    Exposition(Set<String> names) {
        this.names = names;
    }

    /** The next family: its name, Prometheus type (gauge, counter, summary) and help. */
    public Exposition family(String name, String type, String help) {
        family = name;
        familyHead = "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
        familyWritten = false;
        return this;
    }

    /** One sample of the current family: suffix ("", "_sum", "_count"), label pairs, value. */
    public Exposition sample(String suffix, double value, String... labels) {
        String name = family + suffix;
        if (names != null && !names.contains(name)) {
            return this;
        }
        if (!familyWritten) {
            out.append(familyHead);
            familyWritten = true;
        }
        out.append(name);
        if (labels.length > 0) {
            out.append('{');
            for (int i = 0; i + 1 < labels.length; i += 2) {
                if (i > 0) {
                    out.append(',');
                }
                out.append(labels[i]).append("=\"").append(escape(labels[i + 1])).append('"');
            }
            out.append('}');
        }
        out.append(' ').append(number(value)).append('\n');
        return this;
    }

    static String escape(String value) {
        return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    static String number(double value) {
        if (Double.isNaN(value)) {
            return "NaN";
        }
        if (value == Math.rint(value) && Math.abs(value) < 1e15) {
            return Long.toString((long) value);
        }
        return String.format(Locale.ROOT, "%.9g", value).trim();
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
