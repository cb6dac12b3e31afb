package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;

import ch.qos.logback.classic.AsyncAppender;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The example app/config/logback.xml, as provisioning passes it (--logging.config): sync and async audit.
 * A *StandaloneTest starts its own app: it runs in a fork of its own (Camel's servlet registry is JVM-wide).
 */
class LogbackStandaloneTest {

    @ParameterizedTest
    @ValueSource(strings = {"SYNC", "ASYNC"})
    void auditGoesToItsFile(String mode) throws Exception {
        Path dir = Path.of("target", "logback-test-" + mode).toAbsolutePath();
        Path config = Path.of("..", "config", "logback.xml").toAbsolutePath().normalize();
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(LabApplication.class).run(
                "--server.port=0", "--lab.kit.metrics.port=0", "--lab.backend.url=" + BackendStub.get().url(),
                "--logging.config=" + config, "--lab.log.dir=" + dir, "--lab.log.console=OFF",
                "--lab.log.audit.appender=" + mode, "--lab.log.audit.queue-size=1024",
                "--lab.log.audit.discarding-threshold=0", "--lab.log.audit.never-block=true")) {
            Logger audit = (Logger) LoggerFactory.getLogger("audit");
            Appender<ILoggingEvent> appender = audit.getAppender("AUDIT_" + mode);
            assertTrue(appender != null, "audit logger uses AUDIT_" + mode);
            if ("ASYNC".equals(mode)) {
                AsyncAppender async = (AsyncAppender) appender;
                assertTrue(async.getQueueSize() == 1024 && async.getDiscardingThreshold() == 0 && async.isNeverBlock(),
                        "AsyncAppender settings");
            }
            int port = ((ServletWebServerApplicationContext) app).getWebServer().getPort();
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/api/customers/31")).build(), HttpResponse.BodyHandlers.ofString());
            assertTrue(r.statusCode() == 200, r.body());
        } finally {
            ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger("audit").detachAndStopAllAppenders();
        }
        String auditLog = Files.readString(dir.resolve("audit.log"));
        assertTrue(auditLog.contains("API_IN ") && auditLog.contains("API_OUT ") && auditLog.contains("/api/customers/31"),
                auditLog);
        String appLog = Files.readString(dir.resolve("app.log"));
        assertTrue(appLog.contains("Tomcat initialized"), "app.log");
        assertTrue(!appLog.contains("API_IN "), "audit lines stay out of app.log");
    }
}
