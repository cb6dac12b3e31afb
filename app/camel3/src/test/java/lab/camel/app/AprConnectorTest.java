package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.net.ServerSocket;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.AprLifecycleListener;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The APR AJP connector (camel3 stack only). Runs in its own surefire execution whose java.library.path holds
 * Debian's libtcnative-1 (the other tests keep it off the path). Installs libtcnative-1 with apt-get when it is
 * missing and apt-get can run (root); under CI=true a library that cannot be loaded fails the test, elsewhere it
 * skips it loudly.
 */
@ExtendWith(OutputCaptureExtension.class)
class AprConnectorTest {

    static final String LIBRARY = "libtcnative-1.so";
    static ConfigurableApplicationContext app;
    static int ajpPort;
    static String startupLog;

    @BeforeAll
    static void ensureLibraryAndStart(CapturedOutput output) throws Exception {
        if (!onLibraryPath() && new File("/usr/bin/apt-get").canExecute() && isRoot()) {
            System.out.println("AprConnectorTest: installing libtcnative-1 with apt-get");
            if (apt("install", "-y", "-q", "libtcnative-1") != 0) {
                apt("update", "-q");                   // a machine whose package lists were never fetched
                apt("install", "-y", "-q", "libtcnative-1");
            }
        }
        if (!onLibraryPath()) {
            String why = LIBRARY + " is not on java.library.path=" + System.getProperty("java.library.path")
                    + " (install Debian's libtcnative-1, or set -Dtcnative.library.path=<dir> for Maven)";
            if ("true".equals(System.getenv("CI"))) {
                fail(why);
            }
            Assumptions.assumeTrue(false, "SKIPPED (no native library): " + why);
        }
        try (ServerSocket s = new ServerSocket(0)) {
            ajpPort = s.getLocalPort();
        }
        app = new SpringApplicationBuilder(LabApplication.class).run(
                "--server.port=0", "--lab.kit.metrics.port=0", "--lab.backend.url=" + BackendStub.get().url(),
                "--lab.kit.ajp.enabled=true", "--lab.kit.ajp.protocol=apr", "--lab.kit.ajp.secret=apr-secret",
                "--lab.kit.ajp.port=" + ajpPort, "--server.tomcat.threads.max=23", "--server.tomcat.accept-count=11");
        startupLog = output.getAll();
    }

    static int apt(String... args) throws Exception {
        String[] command = new String[args.length + 1];
        command[0] = "apt-get";
        System.arraycopy(args, 0, command, 1, args.length);
        // apt's output goes to a file: surefire reads the fork's own stdout
        File log = new File("target/apt-get.log");
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log));
        pb.environment().put("DEBIAN_FRONTEND", "noninteractive");
        Process p = pb.start();
        if (!p.waitFor(10, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            return -1;
        }
        System.out.println("AprConnectorTest: apt-get " + String.join(" ", args) + " exited " + p.exitValue()
                + " (output in " + log + ")");
        return p.exitValue();
    }

    static boolean onLibraryPath() {
        return Arrays.stream(System.getProperty("java.library.path", "").split(File.pathSeparator))
                .anyMatch(dir -> new File(dir, LIBRARY).isFile());
    }

    static boolean isRoot() {
        try {
            Process p = new ProcessBuilder("id", "-u").start();
            return new String(p.getInputStream().readAllBytes()).trim().equals("0");
        } catch (Exception e) {
            return false;
        }
    }

    @AfterAll
    static void stop() {
        if (app != null) app.close();
    }

    @Test
    void ajpConnectorIsAprAndTheNativeLibraryIsLoaded() throws Exception {
        ServletWebServerApplicationContext context = (ServletWebServerApplicationContext) app;
        TomcatWebServer server = (TomcatWebServer) context.getWebServer();
        Connector ajp = Arrays.stream(server.getTomcat().getService().findConnectors())
                .filter(c -> c.getProtocolHandler() instanceof AbstractAjpProtocol).findFirst().orElseThrow();
        assertEquals("org.apache.coyote.ajp.AjpAprProtocol", ajp.getProtocolHandler().getClass().getName());
        assertTrue(AprLifecycleListener.isAprAvailable(), "APR available");
        assertTrue(Arrays.stream(server.getTomcat().getServer().findLifecycleListeners())
                .anyMatch(l -> l instanceof AprLifecycleListener), "AprLifecycleListener on the Server");
        assertTrue(startupLog.contains("Loaded Apache Tomcat Native library"),
                "the log shows the native library loaded");
        // the knobs reach the APR connector too
        AbstractAjpProtocol<?> p = (AbstractAjpProtocol<?>) ajp.getProtocolHandler();
        assertEquals(23, p.getMaxThreads());
        assertEquals(11, p.getAcceptCount());
    }

    @Test
    void aprAjpRoundTrip() throws Exception {
        AjpClient.Response ok = AjpClient.get(ajpPort, "/api/customers/12", "apr-secret", Map.of());
        assertEquals(200, ok.status, ok.text());
        assertTrue(ok.text().contains("\"fullName\":\"Ada Lovelace\""), ok.text());
        assertEquals(403, AjpClient.get(ajpPort, "/api/customers/12", "nope", Map.of()).status);
    }
}
