package lab.camel.app.stack;

import lab.camel.app.routes.StackHooks;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangeExtension;
import org.springframework.stereotype.Component;

/**
 * camel4 stack: works around Camel 4 (seen on 4.17.0 and still on 4.18.0) with the pooled exchange factory
 * (lab.camel.exchange-factory=pooled).
 * Observed here: an exchange the servlet consumer takes from its pool can still carry the previous request's
 * state: its exchange properties, and error-handling flags (failureHandled, which ExtendedExchangeExtension.reset()
 * never clears, and errorHandlerHandled after a request that completed on another thread, e.g. a parallel
 * multicast). The effects: a failure is no longer turned into a JSON error (500), and a summary stops right after
 * its first step (204). Camel 3.22 passes the same tests with pooling on; on Camel 4.18.0 without this class 12 of
 * RoutesTest's 21 tests fail (500 for 400/404/502, a summary's 204).
 *
 * <p>So when a request enters the API, this clears the error properties and flags a previous request can have
 * left (ApiEdge clears the app's own properties, on both stacks). RoutesTest runs with pooling on to cover it.
 */
@Component
public class PooledExchangeFix implements StackHooks {

    private static final String[] ERROR_PROPERTIES = {
        Exchange.EXCEPTION_CAUGHT, Exchange.FAILURE_ENDPOINT, Exchange.FAILURE_ROUTE_ID, Exchange.FAILURE_HANDLED,
        Exchange.ERRORHANDLER_BRIDGE, Exchange.EXCEPTION_HANDLED
    };

    @Override
    public void onApiIn(Exchange exchange) {
        ExchangeExtension ext = exchange.getExchangeExtension();
        ext.setFailureHandled(false);
        ext.setErrorHandlerHandled(null);
        ext.setRedeliveryExhausted(false);
        for (String name : ERROR_PROPERTIES) {
            exchange.removeProperty(name);
        }
    }
}
