package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/** With AJP off (HTTPD proxies over HTTP) the HTTP connector carries the traffic and gets the Tomcat knobs. */
class HttpTrafficConnectorStandaloneTest {

    @Test
    void theTomcatKnobsReachTheHttpConnector() {
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(LabApplication.class).run(
                "--server.port=0", "--lab.kit.metrics.port=0", "--lab.backend.url=" + BackendStub.get().url(), "--lab.kit.ajp.enabled=false",
                "--server.tomcat.threads.max=57", "--server.tomcat.threads.min-spare=7",
                "--server.tomcat.max-connections=321")) {
            TomcatWebServer server = (TomcatWebServer) ((ServletWebServerApplicationContext) app).getWebServer();
            assertEquals(1, server.getTomcat().getService().findConnectors().length, "no AJP connector");
            AbstractProtocol<?> http = MetricsConnectorStandaloneTest.protocol(app, AbstractHttp11Protocol.class);
            assertEquals(57, http.getMaxThreads());
            assertEquals(7, http.getMinSpareThreads());
            assertEquals(321, http.getMaxConnections());
            assertEquals(57, TomcatKnobsTest.maxPoolSize(http));
        }
    }
}
