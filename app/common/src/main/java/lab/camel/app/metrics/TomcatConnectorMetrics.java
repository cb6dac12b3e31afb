package lab.camel.app.metrics;

import java.util.concurrent.Executor;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ProtocolHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.stereotype.Component;

/**
 * Thread pool and connection gauges for every Tomcat connector, the AJP one included, read from Tomcat's own
 * protocol handlers (no JMX, so server.tomcat.mbeanregistry.enabled can stay at its default). Tag: connector
 * (Tomcat's connector name, e.g. "http-nio-8080", "ajp-nio-127.0.0.1-8009"), protocol (the handler's class).
 */
@Component
public class TomcatConnectorMetrics implements ApplicationListener<WebServerInitializedEvent> {

    private static final Logger LOG = LoggerFactory.getLogger(TomcatConnectorMetrics.class);
    private final MeterRegistry registry;

    public TomcatConnectorMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    @Override
    public void onApplicationEvent(WebServerInitializedEvent event) {
        if (!(event.getWebServer() instanceof TomcatWebServer)) {
            return;
        }
        TomcatWebServer server = (TomcatWebServer) event.getWebServer();
        for (Connector connector : server.getTomcat().getService().findConnectors()) {
            ProtocolHandler handler = connector.getProtocolHandler();
            if (!(handler instanceof AbstractProtocol)) continue;
            AbstractProtocol<?> p = (AbstractProtocol<?>) handler;
            Tags tags = Tags.of("connector", ObjectNameSafe.name(p), "protocol", p.getClass().getSimpleName());
            Gauge.builder("tomcat.connector.threads.config.max", p, AbstractProtocol::getMaxThreads)
                    .tags(tags).description("maxThreads").register(registry);
            Gauge.builder("tomcat.connector.threads.config.min.spare", p, AbstractProtocol::getMinSpareThreads)
                    .tags(tags).description("minSpareThreads").register(registry);
            Gauge.builder("tomcat.connector.threads.current", p, q -> pool(q, false))
                    .tags(tags).description("threads in the connector's pool").register(registry);
            Gauge.builder("tomcat.connector.threads.busy", p, q -> pool(q, true))
                    .tags(tags).description("threads serving a request").register(registry);
            Gauge.builder("tomcat.connector.connections.current", p, AbstractProtocol::getConnectionCount)
                    .tags(tags).description("open connections").register(registry);
            Gauge.builder("tomcat.connector.connections.config.max", p, AbstractProtocol::getMaxConnections)
                    .tags(tags).description("maxConnections").register(registry);
            LOG.info("Connector {}: {} port {} maxThreads={} minSpareThreads={} maxConnections={} acceptCount={} "
                    + "connectionTimeout={} keepAliveTimeout={} maxKeepAliveRequests={} compression={}",
                    ObjectNameSafe.name(p), p.getClass().getName(), connector.getPort(), p.getMaxThreads(),
                    p.getMinSpareThreads(), p.getMaxConnections(), p.getAcceptCount(), p.getConnectionTimeout(),
                    p.getKeepAliveTimeout(), connector.getProperty("maxKeepAliveRequests"),
                    connector.getProperty("compression"));
        }
    }

    private static double pool(AbstractProtocol<?> p, boolean busy) {
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

    /** Tomcat's own connector name ("http-nio-8080"), without the JMX quoting. */
    static final class ObjectNameSafe {
        static String name(AbstractProtocol<?> p) {
            return p.getName().replace("\"", "");
        }
    }
}
