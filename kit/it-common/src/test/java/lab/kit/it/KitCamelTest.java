package lab.kit.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpServer;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** A Camel service's routes and camel-http pool on the kit's page, with no camel-micrometer and no Micrometer: the
 * route timers count what the routes did, and the pool's maximum is the one the service gave its component. */
@SpringBootTest(classes = {ItApplication.class, KitCamelTest.Routes.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "lab.kit.metrics.port=0", "camel.component.http.max-total-connections=17",
        "lab.kit.camel.type-converter-statistics=true"})
class KitCamelTest {
    static final HttpServer BACKEND = backend();

    static HttpServer backend() {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/pong", exchange -> {
                byte[] body = "pong".getBytes();
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            });
            server.start();
            return server;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @AfterAll
    static void stopBackend() {
        BACKEND.stop(0);
    }

    @DynamicPropertySource
    static void backendPort(DynamicPropertyRegistry registry) {
        registry.add("it.backend.port", () -> BACKEND.getAddress().getPort());
    }

    /** Not a @Configuration: the other tests' applications scan this package and must not get these routes. */
    static class Routes {
        @Bean
        RouteBuilder itRoutes() {
            return new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:call").routeId("call").to("http://127.0.0.1:{{it.backend.port}}/pong");
                    from("direct:fail").routeId("fail").throwException(new IllegalStateException("planned"));
                }
            };
        }
    }

    @Autowired
    ApplicationContext context;

    @Autowired
    ProducerTemplate producer;

    @Autowired
    CamelContext camel;

    String page() throws Exception {
        return get("/metrics");
    }

    String get(String path) throws Exception {
        Object kit = context.getBean("labKitMetrics");
        int port = (int) kit.getClass().getMethod("port").invoke(kit);
        HttpResponse<String> answer = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + path)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, answer.statusCode(), answer.body());
        return answer.body();
    }

    static double value(String page, String sample) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(sample) + " (\\S+)$").matcher(page);
        assertTrue(m.find(), sample + " not on the page:\n" + page);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void routesAndTheHttpPoolAreOnThePage() throws Exception {
        for (int i = 0; i < 5; i++) {
            assertEquals("pong", producer.requestBody("direct:call", "", String.class));
        }
        assertThrows(Exception.class, () -> producer.requestBody("direct:fail", ""));
        String page = page();
        String backend = "127.0.0.1:" + BACKEND.getAddress().getPort();
        assertTrue(page.contains("# TYPE camel_route_exchanges_seconds summary\n"), page);
        assertEquals(5, value(page, "camel_route_exchanges_seconds_count{outcome=\"success\",route=\"call\"}"));
        assertTrue(value(page, "camel_route_exchanges_seconds_sum{outcome=\"success\",route=\"call\"}") > 0, page);
        assertEquals(1, value(page, "camel_route_exchanges_seconds_count{outcome=\"failure\",route=\"fail\"}"));
        assertEquals(17, value(page, "httpcomponents_httpclient_pool_total_max{httpclient=\"" + backend + "\"}"));
        assertEquals(0, value(page, "httpcomponents_httpclient_pool_total_pending{httpclient=\"" + backend + "\"}"));
        assertEquals(0, value(page, "httpcomponents_httpclient_pool_total_connections{httpclient=\"" + backend
                + "\",state=\"leased\"}"));
        assertTrue(value(page, "httpcomponents_httpclient_pool_total_connections{httpclient=\"" + backend
                + "\",state=\"available\"}") >= 1, "the calls' connection kept for the next: " + page);
    }

    @Test
    void typeConversionsAreCountedWhereCamelCountsThem() throws Exception {
        assertTrue(camel.isTypeConverterStatisticsEnabled(), "the kit turned Camel's counting on");
        String before = page();
        assertEquals(42, camel.getTypeConverter().convertTo(Integer.class, "42"));
        assertEquals(null, camel.getTypeConverter().convertTo(KitCamelTest.class, "no converter"));
        String page = page();
        assertTrue(page.contains("# TYPE camel_type_converter counter\n"), page);
        for (String outcome : new String[] {"hit", "miss"}) {
            String sample = "camel_type_converter_total{outcome=\"" + outcome + "\"}";
            assertTrue(value(page, sample) >= value(before, sample) + 1, outcome + ": " + page);
        }
        // and the JIT's time, which every JVM with a compiler reports
        assertTrue(page.matches("(?s).*\njvm_compilation_time_ms_total\\{compiler=\"[^\"]+\"} \\d+\n.*"), page);
    }

    @Test
    void infoNamesWhatRuns() throws Exception {
        String info = get("/lab/info");
        assertTrue(info.startsWith("{\"lab\":{"), info);
        assertTrue(info.contains("\"camel\":\"" + camel.getVersion() + "\""), info);
        assertTrue(info.contains("\"springBoot\":\"" + SpringBootVersion.getVersion() + "\""), info);
        assertTrue(info.contains("\"java\":\"" + System.getProperty("java.version") + "\""), info);
        // Boot 2.7 loads Tomcat Native whenever it is on the library path (a host with libtcnative-1): its version
        assertTrue(info.matches(org.apache.catalina.core.AprLifecycleListener.isAprAvailable()
                ? ".*\"tcnative\":\"\\d+\\.\\d+\\.\\d+\".*" : ".*\"tcnative\":\"not loaded\".*"), info);
        assertTrue(info.matches(".*\"connectors\":\\{\"Http11NioProtocol:\\d+\":\"org\\.apache\\.coyote\\.http11\\."
                + "Http11NioProtocol\"}.*"), info);
        // what serves, read from the live threads: these tests run without virtual threads (Java 17, or the property
        // unset), so Tomcat's own pool of platform threads and Camel's platform threads
        assertTrue(info.contains("\"springThreadsVirtual\":\"false\""), info);
        assertTrue(info.matches(".*\"connectorExecutors\":\\{\"Http11NioProtocol:\\d+\":\\{\"class\":\"org\\.apache\\."
                + "tomcat\\.util\\.threads\\.ThreadPoolExecutor\",\"executor\":\"platform\"}}.*"), info);
        assertTrue(info.contains("\"camelThreads\":\"platform\""), info);
        assertTrue(info.contains("\"javaRuntime\":\"" + System.getProperty("java.vendor")), info);
    }
}
