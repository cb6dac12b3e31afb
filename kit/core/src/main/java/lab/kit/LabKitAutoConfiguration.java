package lab.kit;

import lab.kit.camel.CamelMetrics;
import lab.kit.metrics.KitMetrics;
import lab.kit.metrics.MetricSource;
import org.springframework.beans.factory.ObjectProvider;
import lab.kit.tomcat.KitTomcatCustomizer;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * The lab's tuning kit, put on a service's class path by the lab and found by Spring Boot through
 * META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports (read by Boot 2.7 and 3.x): the
 * service's own code is not changed. {@code lab.kit.enabled=false} turns it off.
 *
 * <p>Classes are named by string in the conditions, so a service without Tomcat never loads a Tomcat type.
 */
@AutoConfiguration
@ConditionalOnProperty(name = "lab.kit.enabled", matchIfMissing = true)
public class LabKitAutoConfiguration {

    /** The metrics PCP reads and the readiness check (lab.kit.metrics.enabled=false: none). */
    @Bean
    @ConditionalOnProperty(name = "lab.kit.metrics.enabled", matchIfMissing = true)
    public KitMetrics labKitMetrics(Environment environment, ObjectProvider<MetricSource> sources) {
        return new KitMetrics(environment, sources);
    }

    /** Camel: each route's exchanges and time, camel-http's connection pools (a service without Camel: none). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.apache.camel.spring.boot.CamelContextConfiguration")
    @ConditionalOnProperty(name = "lab.kit.metrics.enabled", matchIfMissing = true)
    public static class Camel {
        @Bean
        public CamelMetrics labKitCamelMetrics(Environment environment) {
            return new CamelMetrics(environment.getProperty("lab.kit.camel.type-converter-statistics", Boolean.class,
                    false));
        }
    }

    /** Tomcat: the AJP connector with its secret, server.tomcat.* on every connector, the small HTTP pool. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.apache.catalina.startup.Tomcat",
            "org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory"})
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    public static class Tomcat {
        @Bean
        public KitTomcatCustomizer labKitTomcatCustomizer(Environment environment) {
            return new KitTomcatCustomizer(environment);
        }
    }
}
