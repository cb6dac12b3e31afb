package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.util.ClassUtils;

/** Misconfigurations stop the start with a clear message instead of silently running something else. */
class StartupFailureTest {

    private static String startFailure(String... properties) {
        String[] args = new String[properties.length + 3];
        args[0] = "--server.port=0";
        args[1] = "--lab.kit.ajp.port=0";
        args[2] = "--lab.backend.url=" + BackendStub.get().url();
        for (int i = 0; i < properties.length; i++) {
            args[i + 3] = "--" + properties[i];
        }
        Throwable t = assertThrows(Throwable.class, () -> new SpringApplicationBuilder(LabApplication.class)
                .run(args).close());
        StringBuilder messages = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            messages.append(c.getMessage()).append('\n');
        }
        return messages.toString();
    }

    @Test
    void ajpWithoutSecretDoesNotStart() {
        String m = startFailure("lab.kit.ajp.enabled=true");
        assertTrue(m.contains("lab.kit.ajp.secret"), m);
    }

    @Test
    void aprWithoutTheNativeLibraryOrOnTomcat10DoesNotStart() {
        // the surefire fork runs with java.library.path pointing at an empty directory
        String m = startFailure("lab.kit.ajp.enabled=true", "lab.kit.ajp.secret=x", "lab.kit.ajp.protocol=apr");
        if (ClassUtils.isPresent("org.apache.coyote.ajp.AjpAprProtocol", null)) {
            assertTrue(m.contains("libtcnative-1") && m.contains("no fallback"), m);
        } else {
            assertTrue(m.contains("has no APR connector"), m);
        }
    }

    @Test
    void unknownProtocolDoesNotStart() {
        String m = startFailure("lab.kit.ajp.enabled=true", "lab.kit.ajp.secret=x", "lab.kit.ajp.protocol=bio");
        assertTrue(m.contains("expected nio, nio2 or apr"), m);
    }
}
