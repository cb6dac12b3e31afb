package lab.camel.app.routes;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.RejectedExecutionException;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.http.base.HttpOperationFailedException;

/**
 * The customer API's routes: each builder's routes audit their input first and their output last, and answer
 * every failure with a JSON body, never a stack trace. (An onException belongs to the builder that declares it,
 * so every API builder declares the same ones here.)
 */
abstract class ApiRouteBuilder extends RouteBuilder {

    @Override
    public final void configure() {
        errors();
        routes();
    }

    /** The routes of this builder. */
    abstract void routes();

    private void errors() {
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
    }

    private static String describe(Exchange e) {
        Throwable t = e.getProperty(Exchange.EXCEPTION_CAUGHT, Throwable.class);
        return t == null ? null : t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }
}
