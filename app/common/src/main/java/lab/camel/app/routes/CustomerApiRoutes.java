package lab.camel.app.routes;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.http.base.HttpOperationFailedException;
import org.apache.camel.model.rest.RestBindingMode;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.stereotype.Component;

/**
 * The customer API (REST DSL on the servlet component, mapped at /api/*).
 * Every route audits its input first and its output last, on the error paths too.
 */
@Component
public class CustomerApiRoutes extends RouteBuilder {

    private final CustomerTransformer transformer;
    private final CustomerValidator validator;
    private final ExecutorService composePool;

    public CustomerApiRoutes(CustomerTransformer transformer, CustomerValidator validator,
                             @Qualifier("composePool") ExecutorService composePool) {
        this.transformer = transformer;
        this.validator = validator;
        this.composePool = composePool;
    }

    @Override
    public void configure() {
        restConfiguration().component("servlet").bindingMode(RestBindingMode.off);

        // --- errors: JSON bodies, never a stack trace ---
        onException(ValidationException.class).handled(true)
            .process(e -> {
                ValidationException v = e.getProperty(Exchange.EXCEPTION_CAUGHT, ValidationException.class);
                ObjectNode body = Json.error(400, "validation failed", v.getMessage());
                body.put("field", v.getField());
                Json.respond(e, 400, body);
            })
            .bean("api", "out");
        onException(HttpOperationFailedException.class).handled(true)
            .process(e -> {
                HttpOperationFailedException f = e.getProperty(Exchange.EXCEPTION_CAUGHT, HttpOperationFailedException.class);
                if (f.getStatusCode() == 404) {
                    Json.respond(e, 404, Json.error(404, "not found", "backend has no " + f.getUri().replaceFirst("^[a-z]+://[^/]+", "")));
                } else {
                    ObjectNode body = Json.error(502, "backend error", "backend answered " + f.getStatusCode());
                    body.put("backendStatus", f.getStatusCode());
                    Json.respond(e, 502, body);
                }
            })
            .bean("api", "out");
        onException(Json.NotJsonException.class).handled(true)         // only backend bodies reach here
            .process(e -> Json.respond(e, 502, Json.error(502, "bad backend response", describe(e))))
            .bean("api", "out");
        onException(InterruptedIOException.class).handled(true)   // socket/response, connect and pool timeouts
            .process(e -> Json.respond(e, 504, Json.error(504, "backend timeout", describe(e))))
            .bean("api", "out");
        onException(RejectedExecutionException.class).handled(true)
            .process(e -> Json.respond(e, 503, Json.error(503, "busy", "compose pool and queue are full")))
            .bean("api", "out");
        onException(IOException.class).handled(true)               // refused, reset, malformed response
            .process(e -> Json.respond(e, 502, Json.error(502, "backend unreachable", describe(e))))
            .bean("api", "out");
        onException(Exception.class).handled(true)
            .process(e -> Json.respond(e, 500, Json.error(500, "internal error", describe(e))))
            .bean("api", "out");

        rest("/customers")
            .get("/{id}").routeId("rest-get-customer").produces(Json.CONTENT_TYPE).to("direct:api-get-customer")
            .get("/{id}/summary").routeId("rest-customer-summary").produces(Json.CONTENT_TYPE)
                .to("direct:api-customer-summary")
            .post().routeId("rest-create-customer").consumes(Json.CONTENT_TYPE).produces(Json.CONTENT_TYPE)
                .to("direct:api-create-customer")
            .delete("/{id}").routeId("rest-delete-customer").to("direct:api-delete-customer");

        from("direct:api-get-customer").routeId("api-get-customer")
            .bean("api", "in")
            .setProperty(BackendRoutes.CUSTOMER_ID, header("id"))
            .to("direct:backend-get-customer")
            .process(e -> Json.respond(e, 200, transformer.customer(Json.read(e.getMessage().getBody(String.class)))))
            .bean("api", "out");

        from("direct:api-create-customer").routeId("api-create-customer")
            .bean("api", "in")
            .process(e -> e.getMessage().setBody(Json.write(validator.validate(e.getMessage().getBody(String.class)))))
            .to("direct:backend-create-customer")
            .process(e -> {
                JsonNode created = Json.read(e.getMessage().getBody(String.class));
                Json.respond(e, 201, transformer.customer(created));
                e.getMessage().setHeader("Location", "/api/customers/" + created.path("id").asText());
            })
            .bean("api", "out");

        from("direct:api-delete-customer").routeId("api-delete-customer")
            .bean("api", "in")
            .setProperty(BackendRoutes.CUSTOMER_ID, header("id"))
            .to("direct:backend-delete-customer")
            .process(e -> {
                e.getMessage().removeHeaders("*");
                e.getMessage().setHeader(Exchange.HTTP_RESPONSE_CODE, 204);
                e.getMessage().setBody(null);
            })
            .bean("api", "out");

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

    private static String describe(Exchange e) {
        Throwable t = e.getProperty(Exchange.EXCEPTION_CAUGHT, Throwable.class);
        return t == null ? null : t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }

    /** Collects each part's body (customer, orders, account) into a map on the resulting exchange. */
    static class PartsAggregation implements AggregationStrategy {
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
}
