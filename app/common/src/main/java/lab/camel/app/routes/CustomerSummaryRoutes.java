package lab.camel.app.routes;

import java.util.Map;
import java.util.concurrent.ExecutorService;

import org.apache.camel.Exchange;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.stereotype.Component;

/** GET /customers/{id}/summary: customer, orders and account fetched at once on the compose pool, then composed. */
@Component
public class CustomerSummaryRoutes extends ApiRouteBuilder {

    private final CustomerTransformer transformer;
    private final ExecutorService composePool;

    public CustomerSummaryRoutes(CustomerTransformer transformer,
                                 @Qualifier("composePool") ExecutorService composePool) {
        this.transformer = transformer;
        this.composePool = composePool;
    }

    @Override
    void routes() {
        from("direct:api-customer-summary").routeId("api-customer-summary")
            .bean("api", "in")
            .setProperty(BackendRoutes.CUSTOMER_ID, header("id"))
            .process(e -> {
                e.removeProperty(PartsAggregation.PARTS);
                e.removeProperty(PartsAggregation.FAILURE);
                e.removeProperty(BackendRoutes.PART_FAILURE);
            })
            .setProperty(BackendRoutes.COMPOSING, constant(true))
            .multicast(new PartsAggregation()).parallelProcessing().executorService(composePool)
                .to("direct:backend-get-customer", "direct:backend-get-orders", "direct:backend-get-account")
            .end()
            .process(e -> {
                e.removeProperty(BackendRoutes.PART);
                e.removeProperty(BackendRoutes.COMPOSING);
                e.removeProperty(Exchange.EXCEPTION_CAUGHT);
                Exception failure = e.getProperty(PartsAggregation.FAILURE, Exception.class);
                if (failure != null) {
                    throw failure; // the first failed part, for onException (404, 502, 504...)
                }
                @SuppressWarnings("unchecked")
                Map<String, String> parts = e.getProperty(PartsAggregation.PARTS, Map.class);
                Json.respond(e, 200, transformer.summary(Json.read(parts.get("customer")),
                        Json.read(parts.get("orders")), Json.read(parts.get("account"))));
            })
            .bean("api", "out");
    }
}
