package lab.kit.metrics;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ProtocolHandler;

/**
 * Every Tomcat connector's pool and connections, the AJP one included, read from Tomcat's own protocol handlers (no
 * JMX: server.tomcat.mbeanregistry.enabled stays off), under the sample app's names:
 * tomcat_connector_threads_{config_max,config_min_spare,current,busy} and
 * tomcat_connector_connections_{current,config_max}, labels connector (Tomcat's name, e.g. http-nio-8080) and
 * protocol (the handler's class).
 */
final class TomcatMetrics {
    private final List<AbstractProtocol<?>> protocols = new CopyOnWriteArrayList<>();

    void add(Connector connector) {
        ProtocolHandler handler = connector.getProtocolHandler();
        if (handler instanceof AbstractProtocol) {
            protocols.add((AbstractProtocol<?>) handler);
        }
    }

    void write(Exposition out) {
        family(out, "tomcat_connector_threads_config_max", "maxThreads", p -> p.getMaxThreads());
        family(out, "tomcat_connector_threads_config_min_spare", "minSpareThreads", p -> p.getMinSpareThreads());
        family(out, "tomcat_connector_threads_current", "threads in the connector's pool", p -> pool(p, false));
        family(out, "tomcat_connector_threads_busy", "threads serving a request", p -> pool(p, true));
        family(out, "tomcat_connector_connections_current", "open connections", p -> p.getConnectionCount());
        family(out, "tomcat_connector_connections_config_max", "maxConnections", p -> p.getMaxConnections());
    }

    private void family(Exposition out, String name, String help, java.util.function.ToDoubleFunction<AbstractProtocol<?>> value) {
        out.family(name, "gauge", help);
        for (AbstractProtocol<?> p : protocols) {
            out.sample("", value.applyAsDouble(p), "connector", connectorName(p), "protocol", p.getClass().getSimpleName());
        }
    }

    /** Tomcat's connector name ("http-nio-8080"), without the JMX quoting of getName(). */
    static String connectorName(AbstractProtocol<?> p) {
        return p.getName().replace("\"", "");
    }

    static double pool(AbstractProtocol<?> p, boolean busy) {
        Executor e = p.getExecutor();
        if (e instanceof java.util.concurrent.ThreadPoolExecutor) {
            java.util.concurrent.ThreadPoolExecutor t = (java.util.concurrent.ThreadPoolExecutor) e;
            return busy ? t.getActiveCount() : t.getPoolSize();
        }
        if (e instanceof org.apache.tomcat.util.threads.ThreadPoolExecutor) {
            org.apache.tomcat.util.threads.ThreadPoolExecutor t = (org.apache.tomcat.util.threads.ThreadPoolExecutor) e;
            return busy ? t.getActiveCount() : t.getPoolSize();
        }
        return Double.NaN;
    }
}
