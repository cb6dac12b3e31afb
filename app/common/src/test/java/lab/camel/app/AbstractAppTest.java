package lab.camel.app;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import lab.kit.metrics.KitMetrics;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * One running app shared by every test class that extends this (Spring caches the context): HTTP on a random
 * port, AJP (nio, secret "s3cret") on a free port, every Tomcat knob set to a non-default value, and the
 * backend stub behind it with a 1 s response timeout; the tuning kit on the class path (as on the machines), its page
 * on a free port.
 */
@SpringBootTest(classes = LabApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "server.tomcat.threads.max=57",
            "server.tomcat.threads.min-spare=7",
            "server.tomcat.max-connections=321",
            "server.tomcat.accept-count=33",
            "server.tomcat.connection-timeout=4321ms",
            "server.tomcat.keep-alive-timeout=5432ms",
            "server.tomcat.max-keep-alive-requests=77",
            "server.compression.enabled=true",
            "server.compression.min-response-size=64B",
            "lab.kit.metrics.port=0",
            "lab.kit.ajp.enabled=true",
            "lab.kit.ajp.protocol=nio",
            "lab.kit.ajp.secret=s3cret",
            "lab.backend.response-timeout-ms=1000",
            "lab.backend.connect-timeout-ms=1000",
            "lab.backend.max-total-connections=40",
            "lab.backend.connections-per-route=30",
            "lab.compose.pool-size=4",
            "lab.compose.max-pool-size=8",
            "lab.compose.queue-size=50",
            "lab.camel.exchange-factory=pooled",
        })
public abstract class AbstractAppTest {

    protected static final String SECRET = "s3cret";
    protected static final int AJP_PORT = freePort();
    protected static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Value("${local.server.port}")
    protected int httpPort;

    @Autowired
    protected ApplicationContext context;

    @DynamicPropertySource
    static void dynamicProperties(DynamicPropertyRegistry registry) {
        registry.add("lab.backend.url", () -> BackendStub.get().url());
        registry.add("lab.kit.ajp.port", () -> AJP_PORT);
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    protected HttpResponse<String> http(String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
                .timeout(Duration.ofSeconds(20))
                .header("Accept", "application/json");
        if (body != null) {
            b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The tuning kit's page (its metrics and /lab/info), as PCP and the lab's collection read it on the machines. */
    protected HttpResponse<String> kit(String path) throws Exception {
        int port = context.getBean(KitMetrics.class).port();
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
    }

    protected static JsonNode json(String text) throws IOException {
        return JSON.readTree(text);
    }
}
