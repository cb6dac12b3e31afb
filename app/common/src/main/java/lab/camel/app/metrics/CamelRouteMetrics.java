package lab.camel.app.metrics;

import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.NamedNode;
import org.apache.camel.Route;
import org.apache.camel.spi.RoutePolicy;
import org.apache.camel.spi.RoutePolicyFactory;
import org.apache.camel.support.RoutePolicySupport;
import org.apache.camel.spring.boot.CamelContextConfiguration;
import org.springframework.stereotype.Component;

/**
 * Camel route exchange counts and timings as the Micrometer timer camel.route.exchanges{route, outcome}
 * (count, total time, max; Prometheus: camel_route_exchanges_seconds_*). Own code rather than camel-micrometer:
 * camel-micrometer 3.22.x is not in this Maven registry, and one implementation keeps both stacks comparable.
 */
@Component
public class CamelRouteMetrics implements CamelContextConfiguration, RoutePolicyFactory {

    private static final String START = "labRouteStart.";
    private final MeterRegistry registry;

    public CamelRouteMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    @Override
    public void beforeApplicationStart(CamelContext camelContext) {
        camelContext.addRoutePolicyFactory(this);
    }

    @Override
    public void afterApplicationStart(CamelContext camelContext) {
    }

    @Override
    public RoutePolicy createRoutePolicy(CamelContext camelContext, String routeId, NamedNode route) {
        Timer ok = timer(routeId, "success");
        // the failure timer is registered at the first failure: every scrape writes, and PCP's agent parses,
        // each series (13 routes' empty failure timers were a quarter of the page)
        return new RoutePolicySupport() {
            @Override
            public void onExchangeBegin(Route r, Exchange exchange) {
                exchange.setProperty(START + routeId, System.nanoTime());
            }

            @Override
            public void onExchangeDone(Route r, Exchange exchange) {
                Long start = exchange.getProperty(START + routeId, Long.class);
                if (start != null) {
                    (exchange.isFailed() ? timer(routeId, "failure") : ok).record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                    exchange.removeProperty(START + routeId);
                }
            }
        };
    }

    private Timer timer(String routeId, String outcome) {
        return Timer.builder("camel.route.exchanges").description("exchanges completed by a Camel route")
                .tag("route", routeId).tag("outcome", outcome).register(registry);
    }
}
