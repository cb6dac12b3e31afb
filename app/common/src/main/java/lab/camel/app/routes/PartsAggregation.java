package lab.camel.app.routes;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;

/** Collects each part's body (customer, orders, account) of a summary into a map on the resulting exchange. */
class PartsAggregation implements AggregationStrategy {
    static final String PARTS = "labParts";
    static final String FAILURE = "labSummaryFailure";

    @Override
    public Exchange aggregate(Exchange oldExchange, Exchange newExchange) {
        Exchange result = oldExchange == null ? newExchange : oldExchange;
        // a part's failure is a property (see BackendRoutes), rethrown after the multicast for onException
        Exception failure = newExchange.getException() != null ? newExchange.getException()
                : newExchange.getProperty(BackendRoutes.PART_FAILURE, Exception.class);
        if (failure != null) {
            newExchange.setException(null);
            if (result.getProperty(FAILURE) == null) {
                result.setProperty(FAILURE, failure);
            }
            return result;
        }
        @SuppressWarnings("unchecked")
        Map<String, String> parts = result.getProperty(PARTS, Map.class);
        if (parts == null) {
            parts = new ConcurrentHashMap<>();
            result.setProperty(PARTS, parts);
        }
        parts.put(newExchange.getProperty(BackendRoutes.PART, String.class), newExchange.getMessage().getBody(String.class));
        return result;
    }
}
