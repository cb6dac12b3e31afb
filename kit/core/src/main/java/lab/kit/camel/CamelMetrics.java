package lab.kit.camel;

import lab.kit.metrics.Exposition;
import lab.kit.metrics.MetricSource;
import lab.kit.metrics.ThreadKind;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.CamelContextConfiguration;

/**
 * A Camel service's routes and HTTP client pools on the kit's page, found through the Camel context that
 * camel-spring-boot hands every CamelContextConfiguration bean (the same API in Camel 3 and 4).
 */
public class CamelMetrics implements CamelContextConfiguration, MetricSource {
    private final RouteTimers routes = new RouteTimers();
    private volatile HttpClientPools pools;
    private volatile String version;

    @Override
    public void beforeApplicationStart(CamelContext camelContext) {
        camelContext.addRoutePolicyFactory(routes);
        pools = new HttpClientPools(camelContext);
        version = camelContext.getVersion();
    }

    @Override
    public void info(java.util.Map<String, Object> lab) {
        if (version != null) {
            lab.put("camel", version);
            lab.put("camelThreads", threadType());
        }
    }

    /**
     * The kind of thread Camel's thread pools and thread factories make: Camel 4's ThreadType.current() ("virtual"
     * on Java 21 with camel.threads.virtual.enabled=true, which camel-spring-boot 4 also sets from
     * spring.threads.virtual.enabled=true; fixed once the class is loaded), read by reflection as Camel 3 has no such
     * class: its threads are platform threads.
     */
    static String threadType() {
        try {
            Class<?> type = Class.forName("org.apache.camel.util.concurrent.ThreadType", true,
                    CamelContext.class.getClassLoader());
            return String.valueOf(type.getMethod("current").invoke(null)).toLowerCase(java.util.Locale.ROOT);
        } catch (ClassNotFoundException camel3) {
            return ThreadKind.PLATFORM;
        } catch (ReflectiveOperationException | LinkageError | RuntimeException unknown) {
            return "unknown (" + unknown + ")";
        }
    }

    @Override
    public void afterApplicationStart(CamelContext camelContext) {
        // endpoints (and their pools) are created as routes start and by dynamic routes later: read at each scrape
    }

    @Override
    public void write(Exposition out) {
        routes.write(out);
        HttpClientPools found = pools;
        if (found != null) {
            found.write(out);
        }
    }
}
