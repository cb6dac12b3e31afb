package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;

import lab.camel.app.routes.BackendRoutes;
import org.apache.camel.component.http.HttpMethods;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * lab.backend.method-as-enum=true: the backend calls' CamelHttpMethod header is camel-http's HttpMethods (what
 * camel-http reads it as), and every call still reaches the backend with its own method. Off (the shared app of the
 * other tests), the header is the method's name.
 */
class BackendMethodAsEnumStandaloneTest {

    @Test
    void theMethodHeaderIsTheEnumAndEachCallKeepsItsMethod() throws Exception {
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(LabApplication.class).run(
                "--server.port=0", "--lab.kit.metrics.port=0", "--lab.backend.url=" + BackendStub.get().url(),
                "--lab.backend.method-as-enum=true")) {
            BackendRoutes routes = app.getBean(BackendRoutes.class);
            assertEquals(HttpMethods.DELETE, routes.methodHeader("DELETE"));
            int port = ((ServletWebServerApplicationContext) app).getWebServer().getPort();
            List<String> seen = BackendStub.get().requests;
            int before = seen.size();
            assertEquals(200, call(port, "GET", "/api/customers/3", null));
            assertEquals(201, call(port, "POST", "/api/customers",
                    "{\"firstName\":\"Ada\",\"lastName\":\"Lovelace\",\"email\":\"ada@x.org\",\"tier\":\"gold\"}"));
            assertEquals(204, call(port, "DELETE", "/api/customers/5", null));
            List<String> calls = seen.subList(before, seen.size());
            assertTrue(calls.contains("GET /customers/3"), calls.toString());
            assertTrue(calls.stream().anyMatch(c -> c.startsWith("POST /customers {")), calls.toString());
            assertTrue(calls.contains("DELETE /customers/5"), calls.toString());
        }
    }

    @Test
    void offTheHeaderIsTheMethodsName() {
        LabProperties lab = new LabProperties();
        assertEquals("GET", new BackendRoutes(lab).methodHeader("GET"));
        lab.getBackend().setMethodAsEnum(true);
        assertEquals(HttpMethods.GET, new BackendRoutes(lab).methodHeader("GET"));
    }

    private static int call(int port, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Accept", "application/json");
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }
}
