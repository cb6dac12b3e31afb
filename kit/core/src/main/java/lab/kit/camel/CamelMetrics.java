package lab.kit.camel;

import lab.kit.metrics.Exposition;
import lab.kit.metrics.MetricSource;
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
