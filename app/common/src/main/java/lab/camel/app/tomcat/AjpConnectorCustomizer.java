package lab.camel.app.tomcat;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

import lab.camel.app.LabProperties;
import org.apache.catalina.LifecycleListener;
import org.apache.catalina.Server;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.AprLifecycleListener;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ProtocolHandler;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.catalina.util.ServerInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.web.ServerProperties;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.core.Ordered;
import org.springframework.stereotype.Component;
import org.springframework.util.ClassUtils;

/**
 * Adds the optional AJP connector (lab.ajp.*) and gives it the same Tomcat knobs as the HTTP connector.
 *
 * <p>Spring Boot applies server.tomcat.* only to its primary (HTTP) connector. This customizer reads the very same
 * {@link ServerProperties} and sets every value that is set there on the AJP connector's protocol handler too:
 * threads.max, threads.min-spare, max-connections, accept-count, connection-timeout, keep-alive-timeout and
 * max-keep-alive-requests. Compression has no AJP implementation in Tomcat; {@link ConnectorTagValve} and the
 * API routes compress AJP responses with the same server.compression.* settings instead.
 *
 * <p>With AJP on, the HTTP connector serves only the metrics scrape and local checks: it keeps a small pool of its own
 * ({@link #METRICS_THREADS_MAX} threads, {@link #METRICS_MIN_SPARE} pre-started, {@link #METRICS_MAX_CONNECTIONS}
 * connections) instead of server.tomcat.*, so a tuning of 300 pre-started threads is not paid twice and the
 * traffic connector's thread gauges are the only ones that move with the load.
 *
 * <p>With lab.ajp.protocol=apr the Tomcat native library must load: the {@link AprLifecycleListener} is registered
 * on the Server and a missing library fails the start with a clear message (no silent fallback to NIO).
 */
@Component
public class AjpConnectorCustomizer implements WebServerFactoryCustomizer<TomcatServletWebServerFactory>, Ordered {

    private static final Logger LOG = LoggerFactory.getLogger(AjpConnectorCustomizer.class);
    static final String NIO = "org.apache.coyote.ajp.AjpNioProtocol";
    static final String NIO2 = "org.apache.coyote.ajp.AjpNio2Protocol";
    static final String APR = "org.apache.coyote.ajp.AjpAprProtocol";

    static final int METRICS_THREADS_MAX = 4;
    static final int METRICS_MIN_SPARE = 1;
    static final int METRICS_MAX_CONNECTIONS = 32;

    private final LabProperties lab;
    private final ServerProperties server;

    public AjpConnectorCustomizer(LabProperties lab, ServerProperties server) {
        this.lab = lab;
        this.server = server;
    }

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE; // after Spring Boot's own customizers
    }

    @Override
    public void customize(TomcatServletWebServerFactory factory) {
        factory.addContextValves(new ConnectorTagValve());
        LabProperties.Ajp ajp = lab.getAjp();
        if (!ajp.isEnabled()) {
            return;
        }
        String protocolClass = protocolClass(ajp.getProtocol());
        if (ajp.getSecret() == null || ajp.getSecret().isEmpty()) {
            throw new IllegalStateException("lab.ajp.enabled=true needs lab.ajp.secret: the AJP connector always "
                    + "requires a secret (secretRequired=true); set the same secret on httpd's ProxyPass (secret=...)");
        }
        if (APR.equals(protocolClass)) {
            requireNativeLibrary();
            // the listener must sit on the Server (Tomcat ignores it elsewhere); the primary connector's customizer
            // runs after Tomcat's Server exists and before it starts
            factory.addConnectorCustomizers(connector -> registerAprListener(connector.getService().getServer()));
        }
        // runs after Spring Boot's own connector customizers (this customizer is ordered last), so it wins
        factory.addConnectorCustomizers(AjpConnectorCustomizer::keepMetricsConnectorSmall);
        Connector connector = new Connector(protocolClass);
        connector.setPort(ajp.getPort());
        connector.setThrowOnFailure(true);
        connector.setProperty("address", ajp.getAddress());
        AbstractAjpProtocol<?> protocol = (AbstractAjpProtocol<?>) connector.getProtocolHandler();
        protocol.setSecretRequired(true);
        protocol.setSecret(ajp.getSecret());
        applyTomcatKnobs(connector);
        factory.addAdditionalTomcatConnectors(connector);
        LOG.info("AJP connector: {} on {}:{} (secret required), maxThreads={} minSpareThreads={} maxConnections={} "
                        + "acceptCount={} connectionTimeout={} keepAliveTimeout={} maxKeepAliveRequests={} compression={}",
                protocol.getClass().getSimpleName(), ajp.getAddress(), ajp.getPort(), protocol.getMaxThreads(),
                protocol.getMinSpareThreads(), protocol.getMaxConnections(), protocol.getAcceptCount(),
                protocol.getConnectionTimeout(), protocol.getKeepAliveTimeout(),
                connector.getProperty("maxKeepAliveRequests"), compressionEnabled() ? "on (by the app)" : "off");
    }

    /** The same values Spring Boot gives the HTTP connector; a value left unset keeps each connector's own default. */
    void applyTomcatKnobs(Connector connector) {
        ServerProperties.Tomcat t = server.getTomcat();
        ProtocolHandler handler = connector.getProtocolHandler();
        AbstractProtocol<?> p = (AbstractProtocol<?>) handler;
        p.setMaxThreads(t.getThreads().getMax());
        p.setMinSpareThreads(t.getThreads().getMinSpare());
        p.setMaxConnections(t.getMaxConnections());
        p.setAcceptCount(t.getAcceptCount());
        Duration connectionTimeout = t.getConnectionTimeout();
        if (connectionTimeout != null) {
            p.setConnectionTimeout((int) connectionTimeout.toMillis());
        }
        Duration keepAlive = t.getKeepAliveTimeout();
        if (keepAlive != null) {
            p.setKeepAliveTimeout((int) keepAlive.toMillis());
        }
        // not a setter of the AJP protocol: goes to its endpoint (Tomcat's AJP processor does not enforce it)
        connector.setProperty("maxKeepAliveRequests", Integer.toString(t.getMaxKeepAliveRequests()));
    }

    /** The primary (HTTP) connector when AJP carries the traffic: metrics and local checks only. */
    static void keepMetricsConnectorSmall(Connector connector) {
        AbstractProtocol<?> p = (AbstractProtocol<?>) connector.getProtocolHandler();
        p.setMaxThreads(METRICS_THREADS_MAX);
        p.setMinSpareThreads(METRICS_MIN_SPARE);
        p.setMaxConnections(METRICS_MAX_CONNECTIONS);
        LOG.info("HTTP connector on port {}: metrics and local checks only (AJP carries the traffic), maxThreads={} "
                + "minSpareThreads={} maxConnections={}", connector.getPort(), METRICS_THREADS_MAX, METRICS_MIN_SPARE,
                METRICS_MAX_CONNECTIONS);
    }

    boolean compressionEnabled() {
        return server.getCompression() != null && server.getCompression().getEnabled();
    }

    static String protocolClass(String name) {
        String p = name == null ? "nio" : name.trim().toLowerCase(Locale.ROOT);
        switch (p) {
            case "nio":
                return NIO;
            case "nio2":
                return NIO2;
            case "apr":
                if (!ClassUtils.isPresent(APR, AjpConnectorCustomizer.class.getClassLoader())) {
                    throw new IllegalStateException("lab.ajp.protocol=apr: " + ServerInfo.getServerInfo()
                            + " has no APR connector (AjpAprProtocol was removed in Tomcat 10.1). "
                            + "Use lab.ajp.protocol=nio or nio2, or run the camel3 stack (app_stack=camel3).");
                }
                return APR;
            default:
                throw new IllegalStateException("lab.ajp.protocol=" + name + ": expected nio, nio2 or apr");
        }
    }

    static void requireNativeLibrary() {
        new AprLifecycleListener(); // marks an instance as created, so isAprAvailable() really tries to load
        if (!AprLifecycleListener.isAprAvailable()) {
            throw new IllegalStateException("lab.ajp.protocol=apr but the Tomcat native library (libtcnative-1) "
                    + "could not be loaded from java.library.path=" + System.getProperty("java.library.path")
                    + ". Install it (Debian: apt-get install libtcnative-1) and put its directory on "
                    + "-Djava.library.path, or choose lab.ajp.protocol=nio|nio2. There is no fallback to NIO.");
        }
    }

    static void registerAprListener(Server server) {
        boolean present = Arrays.stream(server.findLifecycleListeners()).anyMatch(l -> l instanceof AprLifecycleListener);
        if (!present) {
            LifecycleListener listener = new AprLifecycleListener();
            server.addLifecycleListener(listener);
        }
        LOG.info("APR: AprLifecycleListener registered on the Tomcat Server ({})",
                present ? "already there: Spring Boot adds it when the library is on the path" : "added by the lab");
    }
}
