package lab.camel.app.routes;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.camel.Exchange;
import org.springframework.stereotype.Component;

/** POST /customers (validated, created by the backend) and DELETE /customers/{id}. */
@Component
public class CustomerWriteRoutes extends ApiRouteBuilder {

    private final CustomerTransformer transformer;
    private final CustomerValidator validator;

    public CustomerWriteRoutes(CustomerTransformer transformer, CustomerValidator validator) {
        this.transformer = transformer;
        this.validator = validator;
    }

    @Override
    void routes() {
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
    }
}
