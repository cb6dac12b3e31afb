package lab.kit.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.util.ClassUtils;

/** The kit's metrics page on a service without actuator or Micrometer: the names PCP's metric list and the report
 * read, with the labels Micrometer would give them, filtered by ?names=. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "lab.kit.metrics.port=0", "lab.kit.ajp.enabled=true", "lab.kit.ajp.port=0", "lab.kit.ajp.secret=s"})
class KitMetricsTest {

    @TestConfiguration
    static class Pools {
        @Bean(destroyMethod = "shutdown")
        ThreadPoolExecutor itPool() {
            return new ThreadPoolExecutor(2, 7, 1, TimeUnit.MINUTES, new LinkedBlockingQueue<>(50));
        }
    }

    @Autowired
    ApplicationContext context;

    String get(String path) throws Exception {
        Object kit = context.getBean("labKitMetrics");
        int port = (int) kit.getClass().getMethod("port").invoke(kit);
        HttpResponse<String> answer = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, answer.statusCode(), answer.body());
        return answer.body();
    }

    @Test
    void theServiceHasNoMetricsLibraryOfItsOwn() {
        assertFalse(ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry", getClass().getClassLoader()));
    }

    @Test
    void thePageHasWhatPcpAndTheReportRead() throws Exception {
        String page = get("/metrics");
        assertTrue(page.contains("# TYPE jvm_memory_used_bytes gauge\n"), page);
        assertTrue(page.matches("(?s).*jvm_memory_used_bytes\\{area=\"heap\",id=\"[^\"]+\"} \\d+\n.*"), page);
        assertTrue(page.matches("(?s).*tomcat_connector_threads_config_max\\{connector=\"http-nio-[^\"]+\","
                + "protocol=\"Http11NioProtocol\"} 4\n.*"), "the HTTP connector kept small: " + page);
        assertTrue(page.matches("(?s).*tomcat_connector_threads_busy\\{connector=\"ajp-nio-[^\"]+\","
                + "protocol=\"AjpNioProtocol\"} \\d+\n.*"), page);
        assertTrue(page.contains("executor_pool_max_threads{name=\"itPool\"} 7\n"), page);
        assertTrue(page.contains("executor_queue_remaining_tasks{name=\"itPool\"} 50\n"), page);
        assertTrue(page.matches("(?s).*process_files_open_files \\d+\n.*"), page);
        assertTrue(page.contains("# TYPE lab_kit_scrape_seconds summary\n"), page);
        assertTrue(page.contains("# TYPE jvm_compilation_time_ms counter\n"), page);
        assertFalse(page.contains("camel_type_converter"), "Camel counts no conversion unless asked: " + page);
    }

    @Test
    void aMajorCollectionIsCountedWithMicrometersLabels() throws Exception {
        System.gc();
        String page = "";
        for (int i = 0; i < 50 && !page.contains("end of major GC"); i++) {
            Thread.sleep(100);
            page = get("/metrics?names=jvm_gc_pause_seconds_count,jvm_gc_pause_seconds_sum");
        }
        assertTrue(page.matches("(?s).*jvm_gc_pause_seconds_count\\{action=\"end of major GC\",cause=\"System.gc\\(\\)\","
                + "gc=\"[^\"]+\"} [1-9]\\d*\n.*"), page);
    }

    @Test
    void namesFilterThePageAndTheScrapesAreTimed() throws Exception {
        String page = get("/metrics?names=process_files_max_files,lab_kit_scrape_seconds_count");
        assertEquals(2, page.lines().filter(l -> !l.startsWith("#")).count(), page);
        assertTrue(page.startsWith("# HELP process_files_max_files "), page);
        assertFalse(page.contains("jvm_memory"), page);
        String later = get("/metrics?names=lab_kit_scrape_seconds_count");
        assertTrue(later.matches("(?s).*lab_kit_scrape_seconds_count [1-9]\\d*\n"), later);
    }

    @Test
    void readyOnceBootSaysSo() throws Exception {
        assertEquals("{\"status\":\"READY\"}", get("/lab/ready"));
    }
}
