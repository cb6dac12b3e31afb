package lab.camel.app.routes;

import lab.camel.app.LabProperties;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.http.HttpMethods;
import org.springframework.stereotype.Component;

/**
 * One small route per backend call. They have no error handler of their own, so a failure (backend status,
 * timeout, refused connection) propagates to the calling API route, whose onException turns it into 4xx/5xx JSON.
 * The backend URL is the key lab.backend.url; the path travels in the CamelHttpPath header, the method in
 * CamelHttpMethod: a String, as most routes set it, or (lab.backend.method-as-enum) camel-http's HttpMethods, which
 * camel-http reads it as on every call; Camel 4 resolves a String → HttpMethods conversion anew each time, at ~30 %
 * of this service's CPU (docs/methods.md, "The migration, step by step").
 */
@Component
public class BackendRoutes extends RouteBuilder {

    public static final String CUSTOMER_ID = "labCustomerId";
    /** Set on a summary's part exchanges only (the parts the summary route multicasts): which part this is. */
    public static final String PART = "labPart";
    /** Set by the summary route before its multicast; the parts inherit it. */
    public static final String COMPOSING = "labComposing";
    /** A summary part's failure, kept as a property so it never passes through an error handler inside the multicast. */
    public static final String PART_FAILURE = "labPartFailure";

    private final boolean methodAsEnum;

    public BackendRoutes(LabProperties lab) {
        this.methodAsEnum = lab.getBackend().isMethodAsEnum();
    }

    @Override
    public void configure() {
        errorHandler(noErrorHandler());

        call("backend-get-customer", "GET", "/customers/", "", "customer");
        call("backend-get-orders", "GET", "/customers/", "/orders", "orders");
        call("backend-get-account", "GET", "/customers/", "/account", "account");
        call("backend-delete-customer", "DELETE", "/customers/", "", null);

        from("direct:backend-create-customer").routeId("backend-create-customer")
            .process(e -> prepare(e, methodHeader("POST"), "/customers"))
            .setHeader(Exchange.CONTENT_TYPE, constant(Json.CONTENT_TYPE))
            .bean("audit", "backendRequest")
            .to("{{lab.backend.url}}")
            .convertBodyTo(String.class)
            .bean("audit", "backendResponse");
    }

    private void call(String id, String method, String prefix, String suffix, String part) {
        from("direct:" + id).routeId(id)
            .process(e -> {
                e.removeProperty(PART_FAILURE); // defensive: a pooled exchange must not carry an old failure
                String customerId = e.getProperty(CUSTOMER_ID, String.class);
                prepare(e, methodHeader(method), prefix + customerId + suffix);
                e.getMessage().setBody(null);
                if (part != null) e.setProperty(PART, part);
            })
            .doTry()
                .bean("audit", "backendRequest")
                .to("{{lab.backend.url}}")
                .convertBodyTo(String.class)
                .bean("audit", "backendResponse")
            .doCatch(Exception.class).onWhen(exchangeProperty(COMPOSING).isNotNull())
                .process(e -> e.setProperty(PART_FAILURE, e.getProperty(Exchange.EXCEPTION_CAUGHT)))
            .end();
    }

    /** The CamelHttpMethod header's value: the method's name, or camel-http's enum for it. */
    public Object methodHeader(String name) {
        return methodAsEnum ? HttpMethods.valueOf(name) : name;
    }

    /** Drops the inbound HTTP headers (they would steer the http producer) and sets the backend request's own. */
    static void prepare(Exchange e, Object method, String path) {
        e.getMessage().removeHeaders("*");
        e.getMessage().setHeader(Exchange.HTTP_METHOD, method);
        e.getMessage().setHeader(Exchange.HTTP_PATH, path);
        e.getMessage().setHeader("Accept", Json.CONTENT_TYPE);
    }
}
