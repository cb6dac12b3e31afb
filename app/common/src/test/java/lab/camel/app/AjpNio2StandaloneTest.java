package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.Map;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * lab.kit.ajp.protocol=nio2: the AJP connector is AjpNio2Protocol, gets the knobs, and serves an AJP round trip.
 * Also lab.backend.keep-alive=false: every backend call on a new TCP connection.
 */
class AjpNio2StandaloneTest {

    @Test
    void nio2AjpConnector() throws Exception {
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(LabApplication.class).run(
                "--server.port=0", "--lab.kit.metrics.port=0", "--lab.backend.url=" + BackendStub.get().url(), "--lab.kit.ajp.enabled=true",
                "--lab.kit.ajp.protocol=nio2", "--lab.kit.ajp.secret=n2", "--lab.kit.ajp.port=0",
                "--server.tomcat.threads.max=31", "--server.tomcat.threads.min-spare=3",
                "--lab.backend.keep-alive=false")) {
            TomcatWebServer server = (TomcatWebServer) ((ServletWebServerApplicationContext) app).getWebServer();
            Connector ajp = Arrays.stream(server.getTomcat().getService().findConnectors())
                    .filter(c -> c.getProtocolHandler() instanceof AbstractAjpProtocol).findFirst().orElseThrow();
            assertEquals("org.apache.coyote.ajp.AjpNio2Protocol", ajp.getProtocolHandler().getClass().getName());
            AbstractProtocol<?> p = (AbstractProtocol<?>) ajp.getProtocolHandler();
            assertEquals(31, p.getMaxThreads());
            assertEquals(3, p.getMinSpareThreads());
            AjpClient.Response r = AjpClient.get(ajp.getLocalPort(), "/api/customers/6/summary", "n2", Map.of());
            assertEquals(200, r.status, r.text());
            assertEquals(2, AbstractAppTest.json(r.text()).at("/orders/count").asInt());
            java.util.List<Integer> ports = BackendStub.get().clientPorts;
            int before = ports.size();
            for (int i = 0; i < 3; i++) {
                assertEquals(200, AjpClient.get(ajp.getLocalPort(), "/api/customers/" + i, "n2", Map.of()).status);
            }
            java.util.List<Integer> last = ports.subList(before, ports.size());
            assertEquals(3, new java.util.HashSet<>(last).size(), "a new backend connection per call: " + last);
        }
    }
}
