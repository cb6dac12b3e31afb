package lab.camel.app.stack;

import lab.camel.app.routes.StackHooks;
import org.apache.camel.Exchange;
import org.springframework.stereotype.Component;

/**
 * camel4 stack: works around a Camel 4.17.0 bug with the pooled exchange factory (lab.camel.exchange-factory=pooled).
 * ExtendedExchangeExtension.reset() does not clear the failureHandled flag, so once a pooled exchange has been
 * through an onException, the next request that reuses it and fails is not handled any more (500, no JSON error).
 * Clearing the flag when a request enters the API fixes that case; it does not fix everything (see the warning).
 * Camel 3.22 has no such flag.
 */
@Component
public class PooledExchangeFix implements StackHooks {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PooledExchangeFix.class);

    public PooledExchangeFix(org.springframework.core.env.Environment env) {
        if ("pooled".equals(env.getProperty("camel.main.exchange-factory"))) {
            LOG.warn("lab.camel.exchange-factory=pooled on Camel 4.17.0: pooled exchanges are known to carry state "
                    + "between requests (a failed summary can break the next request served by the same exchange). "
                    + "Results with pooling on camel4 are not trustworthy; see app/README.md, Known issues.");
        }
    }

    @Override
    public void onApiIn(Exchange exchange) {
        exchange.getExchangeExtension().setFailureHandled(false);
    }
}
