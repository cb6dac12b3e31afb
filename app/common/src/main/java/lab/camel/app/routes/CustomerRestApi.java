package lab.camel.app.routes;

import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.model.rest.RestBindingMode;
import org.springframework.stereotype.Component;

/** The customer API's paths (REST DSL on the servlet component, mapped at /api/*), each handed to its route. */
@Component
public class CustomerRestApi extends RouteBuilder {

    @Override
    public void configure() {
        restConfiguration().component("servlet").bindingMode(RestBindingMode.off);

        rest("/customers")
            .get("/{id}").routeId("rest-get-customer").produces(Json.CONTENT_TYPE).to("direct:api-get-customer")
            .get("/{id}/summary").routeId("rest-customer-summary").produces(Json.CONTENT_TYPE)
                .to("direct:api-customer-summary")
            .post().routeId("rest-create-customer").consumes(Json.CONTENT_TYPE).produces(Json.CONTENT_TYPE)
                .to("direct:api-create-customer")
            .delete("/{id}").routeId("rest-delete-customer").to("direct:api-delete-customer");
    }
}
