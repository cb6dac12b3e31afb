package lab.kit.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/** What the kit cannot do fails the service's start, naming why: no AJP connector without its secret, no silent
 * fallback from APR to NIO, no APR on Tomcat 10.1. */
class KitRefusalsTest {

    static String whyItFails(String... properties) {
        Throwable failure = assertThrows(Exception.class, () -> KitOffAndDefaultsTest.start(properties).close());
        StringBuilder messages = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    @Test
    void anAjpConnectorWithoutItsSecretDoesNotStart() {
        assertTrue(whyItFails("lab.kit.ajp.enabled=true", "lab.kit.ajp.port=0").contains(
                "lab.kit.ajp.enabled=true needs lab.kit.ajp.secret"));
    }

    @Test
    void anUnknownProtocolIsNamed() {
        assertTrue(whyItFails("lab.kit.ajp.enabled=true", "lab.kit.ajp.port=0", "lab.kit.ajp.secret=s",
                "lab.kit.ajp.protocol=bio").contains("lab.kit.ajp.protocol=bio: expected nio, nio2 or apr"));
    }

    @Test
    void aprRunsOnlyWhereTomcatHasItAndTheNativeLibraryLoads() {
        String[] apr = {"lab.kit.ajp.enabled=true", "lab.kit.ajp.port=0", "lab.kit.ajp.secret=s",
                "lab.kit.ajp.protocol=apr"};
        if (Connectors.tomcatMajor() >= 10) {
            String why = whyItFails(apr);
            assertTrue(why.contains("has no APR connector (AjpAprProtocol was removed in Tomcat 10.1)"), why);
            return;
        }
        try (ConfigurableApplicationContext context = KitOffAndDefaultsTest.start(apr)) {
            assertEquals("org.apache.coyote.ajp.AjpAprProtocol",
                    Connectors.ajp(context).getProtocolHandler().getClass().getName());
        } catch (Exception failure) {       // Tomcat 9 without libtcnative on java.library.path: named, no NIO
            String why = whyItFails(apr);
            assertTrue(why.contains("the Tomcat native library (libtcnative-1) could not be loaded"), why);
        }
    }
}
