package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The article's Tomcat sizing (300 threads, 300 pre-started, 400 connections) with AJP carrying the traffic:
 * the AJP connector has all 300 threads running, the HTTP connector (metrics, local checks) stays at its own 4.
 */
class MetricsConnectorStandaloneTest {

    static AbstractProtocol<?> protocol(ConfigurableApplicationContext app, Class<?> type) {
        TomcatWebServer server = (TomcatWebServer) ((ServletWebServerApplicationContext) app).getWebServer();
        return Arrays.stream(server.getTomcat().getService().findConnectors())
                .map(c -> (AbstractProtocol<?>) c.getProtocolHandler()).filter(type::isInstance).findFirst()
                .orElseThrow(() -> new AssertionError("no " + type.getSimpleName() + " connector"));
    }

    /** Threads alive in a connector's pool now. */
    static int liveThreads(AbstractProtocol<?> p) {
        java.util.concurrent.Executor e = p.getExecutor();
        if (e instanceof java.util.concurrent.ThreadPoolExecutor) {
            return ((java.util.concurrent.ThreadPoolExecutor) e).getPoolSize();
        }
        return ((org.apache.tomcat.util.threads.ThreadPoolExecutor) e).getPoolSize();
    }

    @Test
    void ajpGetsThe300AndTheMetricsConnectorStaysSmall() {
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(LabApplication.class).run(
                "--server.port=0", "--lab.kit.metrics.port=0", "--lab.backend.url=" + BackendStub.get().url(), "--lab.kit.ajp.enabled=true",
                "--lab.kit.ajp.secret=a18", "--lab.kit.ajp.port=0", "--server.tomcat.threads.max=300",
                "--server.tomcat.threads.min-spare=300", "--server.tomcat.max-connections=400")) {
            AbstractProtocol<?> ajp = protocol(app, AbstractAjpProtocol.class);
            assertEquals(300, ajp.getMaxThreads());
            assertEquals(300, ajp.getMinSpareThreads());
            assertEquals(400, ajp.getMaxConnections());
            assertEquals(300, TomcatKnobsTest.maxPoolSize(ajp));
            assertEquals(300, liveThreads(ajp), "pre-started AJP threads");

            AbstractProtocol<?> http = protocol(app, AbstractHttp11Protocol.class);
            assertEquals(4, http.getMaxThreads());
            assertEquals(1, http.getMinSpareThreads());
            assertEquals(32, http.getMaxConnections());
            assertEquals(4, TomcatKnobsTest.maxPoolSize(http));
            int metricsThreads = liveThreads(http);
            assertTrue(metricsThreads >= 1 && metricsThreads <= 4, "live HTTP (metrics) threads: " + metricsThreads);
        }
    }
}
