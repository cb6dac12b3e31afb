package lab.hostile;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A customer's service that tries, in main(), what the lab must keep from it on the host (tests/test_hostile_e2e.py):
 * read a root-only file, write in a folder of root's and in /tmp, connect to a service on the host's loopback. Each
 * attempt is printed ("hostile main: read REFUSED AccessDeniedException"), then the service starts as any would.
 */
@SpringBootApplication
@RestController
public class HostileApplication {
    static final String FOLDER = "/run/camel-lab-hostile";
    static final int PORT = 47815;

    public static void main(String[] args) {
        System.out.println("hostile main: user " + System.getProperty("user.name"));
        System.out.println("hostile main: read " + attempt(() -> Files.readString(Path.of(FOLDER, "secret"))));
        System.out.println("hostile main: write-root " + attempt(() -> Files.writeString(
                Path.of(FOLDER, "planted-by-main"), "x")));
        System.out.println("hostile main: write-tmp " + attempt(() -> Files.writeString(
                Path.of("/tmp/camel-lab-hostile-main"), "x")));
        System.out.println("hostile main: connect " + attempt(() -> {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", PORT), 2000);
            }
            return null;
        }));
        System.out.flush();
        SpringApplication.run(HostileApplication.class, args);
    }

    static String attempt(Callable<Object> what) {
        try {
            what.call();
            return "DONE";
        } catch (Exception e) {
            return "REFUSED " + e.getClass().getSimpleName();
        }
    }

    @GetMapping("/hostile/ping")
    Map<String, String> ping() {
        return Map.of("status", "UP");     // as an actuator says it: jvm_cds's training waits for "UP"
    }
}
