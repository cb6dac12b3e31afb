package lab.kit.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.coyote.AbstractProtocol;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Without lab.kit.ajp the service runs as it would without the kit; unset knobs keep Tomcat's own defaults. */
class KitOffAndDefaultsTest {

    static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(ItApplication.class).web(WebApplicationType.SERVLET)
                .properties("server.port=0", "lab.kit.metrics.port=0").properties(properties).run();
    }

    @Test
    void withoutAjpTheHttpConnectorIsBootsOwn() {
        try (ConfigurableApplicationContext context = start("server.tomcat.threads.max=57")) {
            assertEquals(1, Connectors.of(context).size());
            assertEquals(57, ((AbstractProtocol<?>) Connectors.http(context).getProtocolHandler()).getMaxThreads());
        }
    }

    @Test
    void theKitCanBeTurnedOff() {
        try (ConfigurableApplicationContext context = start("lab.kit.enabled=false", "lab.kit.ajp.enabled=true",
                "lab.kit.ajp.port=0", "lab.kit.ajp.secret=s")) {
            assertEquals(1, Connectors.of(context).size());
        }
    }

    @Test
    void nio2WithUnsetKnobsKeepsTomcatsDefaults() {
        try (ConfigurableApplicationContext context = start("lab.kit.ajp.enabled=true", "lab.kit.ajp.port=0",
                "lab.kit.ajp.secret=s", "lab.kit.ajp.protocol=nio2")) {
            AbstractProtocol<?> p = (AbstractProtocol<?>) Connectors.ajp(context).getProtocolHandler();
            assertEquals("org.apache.coyote.ajp.AjpNio2Protocol", p.getClass().getName());
            assertEquals(200, p.getMaxThreads());
            assertEquals(10, p.getMinSpareThreads());
        }
    }
}
