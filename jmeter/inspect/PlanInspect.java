import java.io.File;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.jmeter.save.SaveService;
import org.apache.jmeter.testelement.TestElement;
import org.apache.jmeter.testelement.property.JMeterProperty;
import org.apache.jmeter.testelement.property.MultiProperty;
import org.apache.jmeter.testelement.property.PropertyIterator;
import org.apache.jmeter.testelement.property.TestElementProperty;
import org.apache.jmeter.util.JMeterUtils;
import org.apache.jorphan.collections.HashTree;

/**
 * Loads a JMeter plan (read from stdin) with JMeter's own loader (SaveService.loadTree) and prints what it built,
 * one JSON object a line: every element of the tree and every element or object held in a property, with its Java
 * class, whether JMeter takes it as enabled (TestElement.isEnabled) and its properties as strings, references
 * decoded (lab/experiment/load/plan_tree.py judges them). Usage: PlanInspect JMETER_HOME < plan.jmx
 * Line: {"id":N,"parent":N|-1,"via":"property path"|"","class":"…","element":true|false,"enabled":true|false,
 *        "name":"testname","props":{"name":"value",…}}. Loader failure: a message on stderr, exit 3.
 */
public final class PlanInspect {
    private final PrintStream out;
    private int next;

    private PlanInspect(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        String home = args[0];
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);          // whatever JMeter prints stays off the JSON lines
        JMeterUtils.setJMeterHome(home);
        JMeterUtils.loadJMeterProperties(home + "/bin/jmeter.properties");
        JMeterUtils.initLocale();
        // the plan comes on stdin: the lab's user need not be able to open it where it lies
        Path copy = Files.createTempFile("plan-inspect-", ".jmx");
        HashTree tree;
        try {
            try (InputStream in = System.in) {
                Files.write(copy, in.readAllBytes());
            }
            tree = SaveService.loadTree(copy.toFile());
        } catch (Throwable e) {
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            System.err.println("PLAN-INSPECT-ERROR " + oneLine(root.getClass().getName() + ": " + root.getMessage()));
            System.exit(3);
            return;
        } finally {
            Files.deleteIfExists(copy);
        }
        if (tree == null) {
            System.err.println("PLAN-INSPECT-ERROR JMeter's loader built no tree");
            System.exit(3);
        }
        new PlanInspect(out).tree(tree, -1);
        out.flush();
    }

    private void tree(HashTree tree, int parent) {
        for (Object key : tree.list()) {
            int id = object(key, parent, "");
            tree(tree.getTree(key), id);
        }
    }

    /** One line for obj (an element of the tree or held by a property), then lines for what its properties hold. */
    private int object(Object obj, int parent, String via) {
        int id = next++;
        StringBuilder line = new StringBuilder();
        line.append("{\"id\":").append(id).append(",\"parent\":").append(parent)
            .append(",\"via\":").append(json(via))
            .append(",\"class\":").append(json(obj == null ? "null" : obj.getClass().getName()));
        List<Object[]> held = new ArrayList<>();
        if (obj instanceof TestElement) {
            TestElement element = (TestElement) obj;
            line.append(",\"element\":true,\"enabled\":").append(element.isEnabled())
                .append(",\"name\":").append(json(element.getName())).append(",\"props\":{");
            boolean first = true;
            for (PropertyIterator it = element.propertyIterator(); it.hasNext(); ) {
                JMeterProperty prop = it.next();
                first = property(prop, prop.getName(), line, first, held);
            }
            line.append('}');
        } else {
            line.append(",\"element\":false,\"enabled\":true,\"name\":\"\",\"props\":{\"value\":")
                .append(json(String.valueOf(obj))).append('}');
        }
        out.println(line.append('}'));
        for (Object[] h : held) {
            object(h[1], id, (String) h[0]);
        }
        return id;
    }

    /** prop, under the name given, as "name":"value" (a collection's items as name[i], named by their place: their
     *  own names are often empty or a path); elements and objects it holds go to held. */
    private boolean property(JMeterProperty prop, String name, StringBuilder line, boolean first, List<Object[]> held) {
        if (prop instanceof TestElementProperty) {
            held.add(new Object[] {name, prop.getObjectValue()});
            return first;
        }
        if (prop instanceof MultiProperty) {
            int i = 0;
            for (PropertyIterator it = ((MultiProperty) prop).iterator(); it.hasNext(); i++) {
                first = property(it.next(), name + "[" + i + "]", line, first, held);
            }
            return first;
        }
        Object value = prop.getObjectValue();
        if (value != null && !(value instanceof String || value instanceof Number || value instanceof Boolean)) {
            held.add(new Object[] {name, value});       // an ObjectProperty: judged by its class
            return first;
        }
        if (!first) {
            line.append(',');
        }
        line.append(json(name)).append(':').append(json(prop.getStringValue()));
        return false;
    }

    private static String oneLine(String text) {
        return text.replace('\n', ' ').replace('\r', ' ');
    }

    private static String json(String text) {
        if (text == null) {
            return "null";
        }
        StringBuilder s = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': s.append("\\\""); break;
                case '\\': s.append("\\\\"); break;
                default:
                    if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
            }
        }
        return s.append('"').toString();
    }
}
