package lab.kit.camel;

import lab.kit.metrics.Exposition;
import lab.kit.metrics.MetricSource;
import lab.kit.metrics.ThreadKind;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.TypeConverterRegistry;
import org.apache.camel.spring.boot.CamelContextConfiguration;

/**
 * A Camel service's routes, HTTP client pools and (where Camel counts them) type conversions on the kit's page,
 * found through the Camel context that camel-spring-boot hands every CamelContextConfiguration bean (the same API in
 * Camel 3 and 4).
 */
public class CamelMetrics implements CamelContextConfiguration, MetricSource {
    private final RouteTimers routes = new RouteTimers();
    private volatile HttpClientPools pools;
    private volatile String version;
    private volatile CamelContext context;
    private final boolean countConversions;

    /** @param countConversions lab.kit.camel.type-converter-statistics: count Camel's type conversions */
    public CamelMetrics(boolean countConversions) {
        this.countConversions = countConversions;
    }

    @Override
    public void beforeApplicationStart(CamelContext camelContext) {
        camelContext.addRoutePolicyFactory(routes);
        pools = new HttpClientPools(camelContext);
        version = camelContext.getVersion();
        context = camelContext;
        if (countConversions) {
            countConversions(camelContext);
        }
    }

    /**
     * Turns Camel's type-converter statistics on. Camel 3 reads the setting at every conversion. Camel 4 chooses its
     * counters once, when it makes the converter, and camel-spring-boot 4 makes it (CamelContext.build()) before it
     * applies camel.main.type-converter-statistics-enabled: the flag then reads true and nothing is counted (seen
     * on 4.18.0). So on Camel 4 the kit gives the registry Camel's own counting statistics in place of its no-op
     * ones, before the routes start; where that fails it says so and the page has no conversions.
     */
    static void countConversions(CamelContext camel) {
        camel.setTypeConverterStatisticsEnabled(true);
        TypeConverterRegistry registry = camel.getTypeConverterRegistry();
        if (!registry.getClass().getName().startsWith("org.apache.camel.")
                || !registry.getStatistics().getClass().getSimpleName().startsWith("Noop")) {
            return;
        }
        try {
            java.lang.reflect.Constructor<?> counting = Class.forName(
                    "org.apache.camel.impl.converter.TypeConverterStatistics", true, registry.getClass().getClassLoader())
                    .getDeclaredConstructor();
            counting.setAccessible(true);
            java.lang.reflect.Field field = Class.forName("org.apache.camel.impl.converter.CoreTypeConverterRegistry",
                    true, registry.getClass().getClassLoader()).getDeclaredField("statistics");
            field.setAccessible(true);
            field.set(registry, counting.newInstance());
        } catch (ReflectiveOperationException | RuntimeException e) {
            camel.setTypeConverterStatisticsEnabled(false);
            org.apache.commons.logging.LogFactory.getLog(CamelMetrics.class).warn(
                    "lab.kit.camel.type-converter-statistics: this Camel's converter cannot count (" + e + ")");
        }
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
        CamelContext camel = context;
        if (camel != null) {
            writeConversions(camel, out);
        }
    }

    /**
     * Camel's type-converter statistics, only where they are counted (counting costs a little on every conversion,
     * so Camel leaves it off): camel_type_converter_total{outcome}, Camel's own counters — noop (nothing to convert:
     * the value had the type already, or was null), attempt (a converter looked up past those fast paths), hit
     * (converted), miss (no converter, fallbacks included), failed (a converter threw).
     */
    static void writeConversions(CamelContext camel, Exposition out) {
        if (!Boolean.TRUE.equals(camel.isTypeConverterStatisticsEnabled())) {
            return;
        }
        TypeConverterRegistry.Statistics stats = camel.getTypeConverterRegistry().getStatistics();
        out.family("camel_type_converter", "counter",
                "Camel's type conversions by outcome (its TypeConverterRegistry statistics)");
        out.sample("_total", stats.getAttemptCounter(), "outcome", "attempt");
        out.sample("_total", stats.getHitCounter(), "outcome", "hit");
        out.sample("_total", stats.getMissCounter(), "outcome", "miss");
        out.sample("_total", stats.getFailedCounter(), "outcome", "failed");
        out.sample("_total", stats.getNoopCounter(), "outcome", "noop");
    }
}
