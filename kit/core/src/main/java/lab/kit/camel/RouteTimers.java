package lab.kit.camel;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import lab.kit.metrics.Exposition;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.NamedNode;
import org.apache.camel.Route;
import org.apache.camel.spi.RoutePolicy;
import org.apache.camel.spi.RoutePolicyFactory;
import org.apache.camel.support.RoutePolicySupport;

/**
 * Each route's completed exchanges and their time, under Micrometer's timer names
 * (camel_route_exchanges_seconds_{count,sum}, labels route and outcome: success or failure), counted by a route
 * policy on every route; no camel-micrometer, whose versions would have to match the service's Camel.
 */
final class RouteTimers implements RoutePolicyFactory {
    private static final String START = "labKitRouteStart.";

    /** One (route, outcome): exchanges and their total time. */
    static final class Timer {
        final LongAdder count = new LongAdder();
        final LongAdder nanos = new LongAdder();
    }

    private final Map<String, Map<String, Timer>> timers = new ConcurrentHashMap<>();

    @Override
    public RoutePolicy createRoutePolicy(CamelContext camelContext, String routeId, NamedNode route) {
        Map<String, Timer> outcomes = timers.computeIfAbsent(routeId, id -> new ConcurrentHashMap<>());
        Timer ok = outcomes.computeIfAbsent("success", o -> new Timer());
        String key = START + routeId;
        return new RoutePolicySupport() {
            @Override
            public void onExchangeBegin(Route r, Exchange exchange) {
                exchange.setProperty(key, System.nanoTime());
            }

            @Override
            public void onExchangeDone(Route r, Exchange exchange) {
                Long start = exchange.getProperty(key, Long.class);
                if (start != null) {
                    // a failure's timer appears at the first failure: no empty series on every scrape
                    Timer t = exchange.isFailed() ? outcomes.computeIfAbsent("failure", o -> new Timer()) : ok;
                    t.count.increment();
                    t.nanos.add(System.nanoTime() - start);
                    exchange.removeProperty(key);
                }
            }
        };
    }

    void write(Exposition out) {
        if (timers.isEmpty()) {
            return;
        }
        out.family("camel_route_exchanges_seconds", "summary", "exchanges completed by a Camel route");
        timers.forEach((route, outcomes) -> outcomes.forEach((outcome, t) -> {
            out.sample("_count", t.count.sum(), "outcome", outcome, "route", route);
            out.sample("_sum", t.nanos.sum() / 1e9, "outcome", outcome, "route", route);
        }));
    }
}
