package lab.kit.metrics;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.catalina.connector.Connector;
import org.springframework.boot.SpringBootVersion;
import org.springframework.util.ClassUtils;

/**
 * {@code GET /lab/info}: what is running, read from the live service — Java, Spring Boot, Tomcat and the Tomcat
 * native library's versions, Camel's when Camel is there, each connector's protocol and port, and the threads that
 * serve: per connector the executor that runs its requests and whether its threads are virtual or platform ones,
 * with {@code spring.threads.virtual.enabled} as the service's configuration has it — as {@code {"lab": {...}}}, the
 * shape the lab's collection reads into a run's versions.
 */
final class LabInfo {
    private final List<Connector> connectors = new CopyOnWriteArrayList<>();
    private final Map<String, Object> executors = new ConcurrentSkipListMap<>();
    private final String springThreadsVirtual;

    LabInfo(String springThreadsVirtual) {
        this.springThreadsVirtual = springThreadsVirtual;
    }

    void add(Connector connector) {
        connectors.add(connector);
    }

    /** Each connector's executor, probed once the service is ready (its pools idle then): the executor is set when
     * the connector starts and does not change after. */
    void probeExecutors() {
        for (Connector c : connectors) {
            executors.put(key(c), ThreadKind.probe(c.getProtocolHandler().getExecutor()));
        }
    }

    static String key(Connector c) {
        return c.getProtocolHandlerClassName().replaceAll(".*\\.", "") + ":" + c.getLocalPort();
    }

    String json(List<MetricSource> sources) {
        Map<String, Object> lab = new TreeMap<>();
        lab.put("java", System.getProperty("java.version"));
        lab.put("javaRuntime", System.getProperty("java.vendor") + " " + System.getProperty("java.runtime.version"));
        lab.put("springBoot", SpringBootVersion.getVersion());
        lab.put("springThreadsVirtual", springThreadsVirtual);
        if (!connectors.isEmpty()) {
            lab.put("tomcat", tomcat());
            lab.put("tcnative", tcnative());
            Map<String, Object> byPort = new TreeMap<>();
            for (Connector c : connectors) {
                byPort.put(key(c), c.getProtocolHandler().getClass().getName());
            }
            lab.put("connectors", byPort);
            if (!executors.isEmpty()) {
                lab.put("connectorExecutors", new TreeMap<>(executors));
            }
        }
        sources.forEach(source -> source.info(lab));
        return "{\"lab\":" + json(lab) + "}";
    }

    static String tomcat() {
        return org.apache.catalina.util.ServerInfo.getServerNumber();
    }

    /** The Tomcat native library's version when it was loaded (Tomcat's own static fields, read by name: they are
     * not in every Tomcat line), else "not loaded". */
    static String tcnative() {
        try {
            if (!org.apache.catalina.core.AprLifecycleListener.isAprAvailable()) {
                return "not loaded";
            }
            Class<?> library = ClassUtils.forName("org.apache.tomcat.jni.Library", LabInfo.class.getClassLoader());
            return library.getField("TCN_MAJOR_VERSION").get(null) + "." + library.getField("TCN_MINOR_VERSION").get(null)
                    + "." + library.getField("TCN_PATCH_VERSION").get(null);
        } catch (ReflectiveOperationException | LinkageError | RuntimeException unknown) {
            return "unknown (" + unknown.getClass().getSimpleName() + ")";
        }
    }

    @SuppressWarnings("unchecked")
    static String json(Object value) {
        if (value instanceof Map) {
            StringBuilder out = new StringBuilder("{");
            ((Map<String, Object>) value).forEach((k, v) -> out.append(out.length() > 1 ? "," : "")
                    .append(json(k)).append(':').append(json(v)));
            return out.append('}').toString();
        }
        if (value == null) {
            return "null";
        }
        String s = value.toString();
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
