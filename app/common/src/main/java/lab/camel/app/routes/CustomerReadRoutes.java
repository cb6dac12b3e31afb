package lab.camel.app.routes;

import org.springframework.stereotype.Component;

/** GET /customers/{id}: the backend's customer, transformed. */
@Component
public class CustomerReadRoutes extends ApiRouteBuilder {

    private final CustomerTransformer transformer;

    public CustomerReadRoutes(CustomerTransformer transformer) {
        this.transformer = transformer;
    }

    @Override
    void routes() {
        from("direct:api-get-customer").routeId("api-get-customer")
            .bean("api", "in")
            .setProperty(BackendRoutes.CUSTOMER_ID, header("id"))
            .to("direct:backend-get-customer")
            .process(e -> Json.respond(e, 200, transformer.customer(Json.read(e.getMessage().getBody(String.class)))))
            .bean("api", "out");
    }
}
