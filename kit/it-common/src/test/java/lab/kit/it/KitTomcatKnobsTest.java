package lab.kit.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;

/** The lab's knobs as the lab writes them (server.tomcat.*, lab.kit.ajp.*) reach both connectors of a service that
 * knows nothing of the lab; with AJP carrying the traffic the HTTP connector keeps its own small pool. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "lab.kit.ajp.enabled=true", "lab.kit.ajp.port=0", "lab.kit.ajp.secret=it-secret", "lab.kit.metrics.port=0",
        "server.tomcat.threads.max=57", "server.tomcat.threads.min-spare=7", "server.tomcat.max-connections=321",
        "server.tomcat.accept-count=33", "server.tomcat.connection-timeout=4321ms",
        "server.tomcat.keep-alive-timeout=1234", "server.tomcat.max-keep-alive-requests=77"})
class KitTomcatKnobsTest {

    @Autowired
    ApplicationContext context;

    @LocalServerPort
    int httpPort;

    @Test
    void theAjpConnectorRunsWithItsSecretAndEveryKnob() {
        Connector ajp = Connectors.ajp(context);
        AbstractAjpProtocol<?> p = (AbstractAjpProtocol<?>) ajp.getProtocolHandler();
        assertEquals("org.apache.coyote.ajp.AjpNioProtocol", p.getClass().getName());
        assertTrue(ajp.getLocalPort() > 0, "AJP listens");
        assertTrue(p.getSecretRequired());
        assertEquals("127.0.0.1", p.getAddress().getHostAddress());
        assertEquals(57, p.getMaxThreads());
        assertEquals(7, p.getMinSpareThreads());
        assertEquals(321, p.getMaxConnections());
        assertEquals(33, p.getAcceptCount());
        assertEquals(4321, p.getConnectionTimeout());
        assertEquals(1234, p.getKeepAliveTimeout());
        assertEquals("77", String.valueOf(ajp.getProperty("maxKeepAliveRequests")));
    }

    @Test
    void theHttpConnectorServesChecksFromASmallPool() throws Exception {
        AbstractProtocol<?> p = (AbstractProtocol<?>) Connectors.http(context).getProtocolHandler();
        assertEquals(4, p.getMaxThreads());
        assertEquals(1, p.getMinSpareThreads());
        assertEquals(32, p.getMaxConnections());
        assertEquals(33, p.getAcceptCount(), "what Boot sets and the kit does not touch still applies");
        HttpResponse<String> answer = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/hello")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, answer.statusCode());
        assertEquals("hello", answer.body());
    }
}
