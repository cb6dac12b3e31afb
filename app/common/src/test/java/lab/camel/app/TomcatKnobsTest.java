package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.net.http.HttpResponse;
import java.util.List;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;

/** Reads the non-default Tomcat knobs back from the running AJP connector (Tomcat's own objects), and the HTTP
 * connector's own small pool: with AJP on, HTTP serves only metrics and local checks. */
class TomcatKnobsTest extends AbstractAppTest {

    @Autowired
    ServletWebServerApplicationContext context;

    private List<Connector> connectors() {
        TomcatWebServer server = (TomcatWebServer) context.getWebServer();
        return Arrays.asList(server.getTomcat().getService().findConnectors());
    }

    private Connector ajp() {
        return connectors().stream().filter(c -> c.getProtocolHandler() instanceof AbstractAjpProtocol).findFirst()
                .orElseThrow(() -> new AssertionError("no AJP connector"));
    }

    private Connector http() {
        return connectors().stream().filter(c -> c.getProtocolHandler() instanceof AbstractHttp11Protocol).findFirst()
                .orElseThrow(() -> new AssertionError("no HTTP connector"));
    }

    @Test
    void bothConnectorsRun() {
        assertEquals(2, connectors().size(), connectors().toString());
        assertEquals(AJP_PORT, ajp().getLocalPort());
        assertEquals(httpPort, http().getLocalPort());
        assertEquals("org.apache.coyote.ajp.AjpNioProtocol", ajp().getProtocolHandler().getClass().getName());
    }

    @Test
    void withAjpTheHttpConnectorKeepsItsOwnSmallPool() {
        AbstractHttp11Protocol<?> p = (AbstractHttp11Protocol<?>) http().getProtocolHandler();
        assertEquals(4, p.getMaxThreads(), "HTTP (metrics) maxThreads");
        assertEquals(1, p.getMinSpareThreads(), "HTTP (metrics) minSpareThreads");
        assertEquals(32, p.getMaxConnections(), "HTTP (metrics) maxConnections");
        assertEquals(4, maxPoolSize(p), "HTTP (metrics) executor");
        // what Spring Boot sets on its connector and the lab does not touch still applies
        assertEquals(77, p.getMaxKeepAliveRequests());
        assertEquals("on", p.getCompression());
        assertEquals(64, p.getCompressionMinSize());
    }

    @Test
    void tomcatKnobsReachTheAjpConnector() {
        Connector ajp = ajp();
        assertKnobs(ajp);
        assertEquals("77", String.valueOf(ajp.getProperty("maxKeepAliveRequests")));
        AbstractAjpProtocol<?> p = (AbstractAjpProtocol<?>) ajp.getProtocolHandler();
        assertTrue(p.getSecretRequired());
        assertNotNull(p.getAddress());
        assertEquals("127.0.0.1", p.getAddress().getHostAddress());
    }

    private static void assertKnobs(Connector connector) {
        AbstractProtocol<?> p = assertInstanceOf(AbstractProtocol.class, connector.getProtocolHandler());
        String which = connector.toString();
        assertEquals(57, p.getMaxThreads(), which + " maxThreads");
        assertEquals(7, p.getMinSpareThreads(), which + " minSpareThreads");
        assertEquals(321, p.getMaxConnections(), which + " maxConnections");
        assertEquals(33, p.getAcceptCount(), which + " acceptCount");
        assertEquals(4321, p.getConnectionTimeout(), which + " connectionTimeout");
        assertEquals(5432, p.getKeepAliveTimeout(), which + " keepAliveTimeout");
        assertEquals(57, maxPoolSize(p), which + " executor");    // the running pool, not only the setting
    }

    static int maxPoolSize(AbstractProtocol<?> p) {
        java.util.concurrent.Executor e = p.getExecutor();
        if (e instanceof java.util.concurrent.ThreadPoolExecutor) {
            return ((java.util.concurrent.ThreadPoolExecutor) e).getMaximumPoolSize();
        }
        return ((org.apache.tomcat.util.threads.ThreadPoolExecutor) e).getMaximumPoolSize();
    }

    @Test
    void metricsCoverBothConnectorsTheClientPoolCamelAndTheJvm() throws Exception {
        http("GET", "/api/customers/3", null);
        HttpResponse<String> pr = kit("/metrics");
        String m = pr.statusCode() + " " + pr.headers().map() + "\n" + pr.body();
        java.nio.file.Files.writeString(java.nio.file.Path.of("target/prometheus.txt"), m);
        String ajpName = ((AbstractProtocol<?>) ajp().getProtocolHandler()).getName().replace("\"", "");
        assertTrue(m.lines().anyMatch(l -> l.startsWith("tomcat_connector_threads_config_max")
                && l.contains("connector=\"" + ajpName + "\"") && l.trim().endsWith(" 57")), "AJP thread gauge " + ajpName);
        assertTrue(m.contains("tomcat_connector_threads_busy"), "busy threads");
        assertTrue(m.contains("tomcat_connector_connections_current"), "connections");
        assertTrue(m.lines().anyMatch(l -> l.startsWith("httpcomponents_httpclient_pool_total_max")
                && l.contains("httpclient=\"127.0.0.1:") && l.trim().endsWith(" 40")), "backend client pool max 40");
        assertTrue(m.lines().anyMatch(l -> l.startsWith("camel_route_exchanges_seconds_count")
                && l.contains("route=\"api-get-customer\"")), "camel route timer");
        assertTrue(m.contains("jvm_memory_used_bytes"), "JVM memory");
        assertTrue(m.contains("jvm_gc_pause_seconds") || m.contains("jvm_gc_live_data_size_bytes"), "JVM GC");
    }
}
