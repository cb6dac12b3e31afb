package lab.kit.tomcat;

import java.util.Arrays;
import java.util.Locale;

import org.apache.catalina.Server;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.AprLifecycleListener;
import org.apache.catalina.util.ServerInfo;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * What the lab tunes in a service's embedded Tomcat, without a line of the service's code: the AJP connector HTTPD
 * speaks to (lab.kit.ajp.*: enabled, port, address, secret, protocol nio|nio2|apr), given every server.tomcat.*
 * knob the service's configuration sets (Spring Boot applies them to its primary HTTP connector only), and, with
 * AJP carrying the traffic, a small pool of the HTTP connector's own ({@link #HTTP_THREADS_MAX} threads,
 * {@link #HTTP_MIN_SPARE} pre-started, {@link #HTTP_MAX_CONNECTIONS} connections: it then serves only local checks
 * and scrapes, and a tuning of 300 pre-started threads is not paid twice).
 *
 * <p>With spring.threads.virtual.enabled=true the AJP connector runs on the executor Spring Boot gave the HTTP one
 * (virtual threads on Boot 3.2+ and Java 21; see {@link #shareExecutor}).
 *
 * <p>Ordered last, so it runs after Spring Boot's own customizers. With protocol apr the Tomcat native library
 * must load (no silent fallback to NIO), and Tomcat 10.1 has no APR connector: both fail the start, naming why.
 * The secret is always required: an AJP connector without one fails the start.
 */
public class KitTomcatCustomizer implements WebServerFactoryCustomizer<TomcatServletWebServerFactory>, Ordered {

    // commons-logging (spring-jcl): in every Spring Boot service, whatever logging it chose
    private static final Log LOG = LogFactory.getLog(KitTomcatCustomizer.class);
    static final String NIO = "org.apache.coyote.ajp.AjpNioProtocol";
    static final String NIO2 = "org.apache.coyote.ajp.AjpNio2Protocol";
    static final String APR = "org.apache.coyote.ajp.AjpAprProtocol";
    public static final int HTTP_THREADS_MAX = 4;
    public static final int HTTP_MIN_SPARE = 1;
    public static final int HTTP_MAX_CONNECTIONS = 32;

    private final Environment environment;

    public KitTomcatCustomizer(Environment environment) {
        this.environment = environment;
    }

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }

    @Override
    public void customize(TomcatServletWebServerFactory factory) {
        if (!environment.getProperty("lab.kit.ajp.enabled", Boolean.class, false)) {
            return;
        }
        String protocolClass = protocolClass(environment.getProperty("lab.kit.ajp.protocol", "nio"));
        String secret = environment.getProperty("lab.kit.ajp.secret", "");
        if (secret.isEmpty()) {
            throw new IllegalStateException("lab.kit.ajp.enabled=true needs lab.kit.ajp.secret: the lab's AJP "
                    + "connector always requires a secret; HTTPD's ProxyPass sends the same one (secret=...)");
        }
        if (APR.equals(protocolClass)) {
            requireNativeLibrary();
            // the listener must sit on the Server (Tomcat ignores it elsewhere): the primary connector's customizer
            // runs once the Server exists and before it starts
            factory.addConnectorCustomizers(connector -> registerAprListener(connector.getService().getServer()));
        }
        Connector connector = new Connector(protocolClass);
        boolean virtualThreads = environment.getProperty("spring.threads.virtual.enabled", Boolean.class, false);
        factory.addConnectorCustomizers(primary -> {
            keepHttpConnectorSmall(primary);
            if (virtualThreads) {
                shareExecutor(primary, connector);
            }
        });
        int port = environment.getProperty("lab.kit.ajp.port", Integer.class, 8009);
        String address = environment.getProperty("lab.kit.ajp.address", "127.0.0.1");
        connector.setPort(port);
        connector.setThrowOnFailure(true);
        connector.setProperty("address", address);
        AbstractAjpProtocol<?> protocol = (AbstractAjpProtocol<?>) connector.getProtocolHandler();
        protocol.setSecretRequired(true);
        protocol.setSecret(secret);
        TomcatKnobs knobs = TomcatKnobs.of(environment);
        apply(knobs, connector);
        factory.addAdditionalTomcatConnectors(connector);
        LOG.info(String.format("lab kit: AJP connector %s on %s:%d (secret required), set: %s; maxThreads=%d "
                        + "minSpareThreads=%d maxConnections=%d acceptCount=%d connectionTimeout=%d keepAliveTimeout=%d",
                protocol.getClass().getSimpleName(), address, port, knobs, protocol.getMaxThreads(),
                protocol.getMinSpareThreads(), protocol.getMaxConnections(), protocol.getAcceptCount(),
                protocol.getConnectionTimeout(), protocol.getKeepAliveTimeout()));
    }

    /** The knobs the configuration sets, onto a connector; an unset one keeps the connector's own default. */
    static void apply(TomcatKnobs knobs, Connector connector) {
        AbstractProtocol<?> p = (AbstractProtocol<?>) connector.getProtocolHandler();
        if (knobs.maxThreads != null) {
            p.setMaxThreads(knobs.maxThreads);
        }
        if (knobs.minSpareThreads != null) {
            p.setMinSpareThreads(knobs.minSpareThreads);
        }
        if (knobs.maxConnections != null) {
            p.setMaxConnections(knobs.maxConnections);
        }
        if (knobs.acceptCount != null) {
            p.setAcceptCount(knobs.acceptCount);
        }
        if (knobs.connectionTimeout != null) {
            p.setConnectionTimeout((int) knobs.connectionTimeout.toMillis());
        }
        if (knobs.keepAliveTimeout != null) {
            p.setKeepAliveTimeout((int) knobs.keepAliveTimeout.toMillis());
        }
        if (knobs.maxKeepAliveRequests != null) {     // an endpoint property: not a setter of the AJP protocol
            connector.setProperty("maxKeepAliveRequests", Integer.toString(knobs.maxKeepAliveRequests));
        }
    }

    /**
     * spring.threads.virtual.enabled=true: Spring Boot 3.2+ on Java 21 gives its HTTP connector's protocol handler a
     * virtual-thread executor (TomcatVirtualThreadsWebServerFactoryCustomizer, a protocol handler customizer), but it
     * customizes its primary connector only: the AJP connector would keep Tomcat's pool of platform threads. So the
     * AJP connector gets the very executor Boot gave the HTTP one (Boot runs the protocol handler customizers before
     * the connector customizers, where this is called). Without one (Boot before 3.2, Java before 21) AJP keeps
     * Tomcat's own pool, like HTTP, and says so.
     */
    static void shareExecutor(Connector primary, Connector ajp) {
        java.util.concurrent.Executor executor = primary.getProtocolHandler().getExecutor();
        if (executor == null) {
            LOG.warn("lab kit: spring.threads.virtual.enabled=true but Spring Boot gave the HTTP connector no executor "
                    + "of its own (virtual threads need Spring Boot 3.2+ on Java 21; this is Java "
                    + System.getProperty("java.version") + "): the AJP connector keeps Tomcat's pool, like HTTP");
            return;
        }
        ajp.getProtocolHandler().setExecutor(executor);
        LOG.info("lab kit: AJP connector on the HTTP connector's executor (spring.threads.virtual.enabled=true): "
                + executor.getClass().getName());
    }

    /** The primary (HTTP) connector while AJP carries the traffic: local checks and scrapes only. */
    static void keepHttpConnectorSmall(Connector connector) {
        AbstractProtocol<?> p = (AbstractProtocol<?>) connector.getProtocolHandler();
        p.setMaxThreads(HTTP_THREADS_MAX);
        p.setMinSpareThreads(HTTP_MIN_SPARE);
        p.setMaxConnections(HTTP_MAX_CONNECTIONS);
        LOG.info(String.format("lab kit: HTTP connector on port %d for local checks only (AJP carries the traffic): "
                + "maxThreads=%d minSpareThreads=%d maxConnections=%d", connector.getPort(), HTTP_THREADS_MAX,
                HTTP_MIN_SPARE, HTTP_MAX_CONNECTIONS));
    }

    static String protocolClass(String name) {
        switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "nio":
                return NIO;
            case "nio2":
                return NIO2;
            case "apr":
                if (!ClassUtils.isPresent(APR, KitTomcatCustomizer.class.getClassLoader())) {
                    throw new IllegalStateException("lab.kit.ajp.protocol=apr: " + ServerInfo.getServerInfo()
                            + " has no APR connector (AjpAprProtocol was removed in Tomcat 10.1): use nio or nio2");
                }
                return APR;
            default:
                throw new IllegalStateException("lab.kit.ajp.protocol=" + name + ": expected nio, nio2 or apr");
        }
    }

    static void requireNativeLibrary() {
        new AprLifecycleListener();    // marks an instance as created, so isAprAvailable() really tries to load
        if (!AprLifecycleListener.isAprAvailable()) {
            throw new IllegalStateException("lab.kit.ajp.protocol=apr but the Tomcat native library (libtcnative-1) "
                    + "could not be loaded from java.library.path=" + System.getProperty("java.library.path")
                    + " (Debian: apt-get install libtcnative-1); there is no fallback to NIO");
        }
    }

    static void registerAprListener(Server server) {
        boolean present = Arrays.stream(server.findLifecycleListeners()).anyMatch(l -> l instanceof AprLifecycleListener);
        if (!present) {
            server.addLifecycleListener(new AprLifecycleListener());
        }
        LOG.info("lab kit: APR listener on the Tomcat Server (" + (present ? "Spring Boot's" : "added by the kit") + ")");
    }
}
