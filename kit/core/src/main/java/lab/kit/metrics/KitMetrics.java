package lab.kit.metrics;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.apache.catalina.connector.Connector;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.web.context.WebServerInitializedEvent;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * The metrics PCP scrapes from a service, whether or not it has actuator or Micrometer, on the JDK's own HTTP
 * server (module jdk.httpserver) at 127.0.0.1:{@code lab.kit.metrics.port} (9464; 0: any free port), one thread:
 * a scrape never takes a request thread of the service.
 *
 * <ul>
 * <li>{@code GET /metrics[?names=a,b]}: JVM, Tomcat connectors, the service's thread pools, the kit's other
 * sources (Camel's routes and HTTP client pools when Camel is there), and the kit's own scrape time
 * ({@code lab_kit_scrape_seconds}: the lab's own cost);</li>
 * <li>{@code GET /lab/info}: the running versions (Java, Boot, Tomcat, tcnative, Camel), the connectors and the
 * kind of thread (virtual or platform) each connector's executor and Camel's thread pools run on;</li>
 * <li>{@code GET /lab/ready}: 200 once Spring Boot says the application is ready, 503 before (the health check of a
 * service without actuator).</li>
 * </ul>
 */
public class KitMetrics implements ApplicationListener<ApplicationEvent> {
    private static final Log LOG = LogFactory.getLog(KitMetrics.class);
    private static final String TOMCAT = "org.springframework.boot.web.embedded.tomcat.TomcatWebServer";

    private final Environment environment;
    private final JvmMetrics jvm = new JvmMetrics();
    private final TomcatMetrics tomcat = new TomcatMetrics();
    private final ExecutorMetrics executors = new ExecutorMetrics();
    private final LabInfo info;
    private final ObjectProvider<MetricSource> sourceBeans;
    private volatile List<MetricSource> sources = List.of();
    private final AtomicLong scrapes = new AtomicLong();
    private final AtomicLong scrapeNanos = new AtomicLong();
    private volatile boolean ready;
    private HttpServer server;

    public KitMetrics(Environment environment, ObjectProvider<MetricSource> sources) {
        this.environment = environment;
        this.sourceBeans = sources;
        this.info = new LabInfo(environment.getProperty("spring.threads.virtual.enabled", "false"));
    }

    @Override
    public void onApplicationEvent(ApplicationEvent event) {
        if (event instanceof WebServerInitializedEvent && ClassUtils.isPresent(TOMCAT, getClass().getClassLoader())) {
            connectors((WebServerInitializedEvent) event);
        } else if (event instanceof ContextRefreshedEvent) {
            start();        // as soon as the context is up: PCP scrapes while the service finishes starting
        } else if (event instanceof ApplicationReadyEvent) {
            executors.find(((ApplicationReadyEvent) event).getApplicationContext());
            info.probeExecutors();
            sources = sourceBeans.orderedStream().collect(java.util.stream.Collectors.toList());
            ready = true;
        } else if (event instanceof ContextClosedEvent && server != null) {
            server.stop(0);
            server = null;
        }
    }

    private void connectors(WebServerInitializedEvent event) {
        if (event.getWebServer() instanceof TomcatWebServer) {
            for (Connector connector : ((TomcatWebServer) event.getWebServer()).getTomcat().getService().findConnectors()) {
                tomcat.add(connector);
                info.add(connector);
            }
        }
    }

    /** The port the metrics answer on (once started), for the tests and the log. */
    public int port() {
        return server == null ? -1 : server.getAddress().getPort();
    }

    synchronized void start() {
        if (server != null) {
            return;
        }
        int port = environment.getProperty("lab.kit.metrics.port", Integer.class, 9464);
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 16);
        } catch (IOException e) {
            throw new IllegalStateException("lab kit: cannot serve the metrics on 127.0.0.1:" + port + " ("
                    + e.getMessage() + "); set lab.kit.metrics.port to a free port", e);
        }
        server.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "lab-kit-metrics");
            t.setDaemon(true);
            return t;
        }));
        server.createContext("/metrics", this::metrics);
        server.createContext("/lab/info", exchange -> answer(exchange, 200, info.json(sources), "application/json"));
        server.createContext("/lab/ready", exchange -> answer(exchange, ready ? 200 : 503,
                ready ? "{\"status\":\"READY\"}" : "{\"status\":\"STARTING\"}", "application/json"));
        server.start();
        LOG.info("lab kit: metrics on http://127.0.0.1:" + port() + "/metrics");
    }

    private void metrics(HttpExchange exchange) throws IOException {
        long started = System.nanoTime();
        Exposition out = new Exposition(names(exchange.getRequestURI().getRawQuery()));
        jvm.write(out);
        tomcat.write(out);
        executors.write(out);
        sources.forEach(source -> source.write(out));
        out.family("lab_kit_scrape_seconds", "summary", "time the kit took to render /metrics (before this one)");
        out.sample("_count", scrapes.get());
        out.sample("_sum", scrapeNanos.get() / 1e9);
        answer(exchange, 200, out.toString(), "text/plain; version=0.0.4; charset=utf-8");
        scrapes.incrementAndGet();
        scrapeNanos.addAndGet(System.nanoTime() - started);
    }

    static Set<String> names(String query) {
        if (query == null) {
            return null;
        }
        Set<String> names = new HashSet<>();
        for (String pair : query.split("&")) {
            if (pair.startsWith("names=")) {
                String value = URLDecoder.decode(pair.substring(6), StandardCharsets.UTF_8);
                Arrays.stream(value.split(",")).filter(n -> !n.isEmpty()).forEach(names::add);
            }
        }
        return names.isEmpty() ? null : names;
    }

    private static void answer(HttpExchange exchange, int status, String body, String type) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}
