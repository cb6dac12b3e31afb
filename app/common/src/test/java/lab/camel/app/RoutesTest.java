package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import lab.camel.app.audit.AuditLog;
import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.slf4j.LoggerFactory;

/** The API's routes against the in-process backend stub: success, backend 404/500/timeout, bad bodies, summary. */
class RoutesTest extends AbstractAppTest {

    private final ListAppender<ILoggingEvent> audit = new ListAppender<>();

    @BeforeEach
    void captureAudit() {
        audit.start();
        ((Logger) LoggerFactory.getLogger(AuditLog.LOGGER)).addAppender(audit);
    }

    @AfterEach
    void stopCapture() {
        ((Logger) LoggerFactory.getLogger(AuditLog.LOGGER)).detachAppender(audit);
    }

    private List<String> auditLines() {
        return audit.list.stream().map(ILoggingEvent::getFormattedMessage).collect(Collectors.toList());
    }

    @Test
    void getCustomerIsTransformed() throws Exception {
        HttpResponse<String> r = http("GET", "/api/customers/42", null);
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
        JsonNode c = json(r.body());
        assertEquals("42", c.get("customerId").asText());
        assertEquals("Ada Lovelace", c.get("fullName").asText());
        assertEquals("Ada", c.get("givenName").asText());
        assertEquals("example.org", c.get("emailDomain").asText());
        assertEquals("London", c.get("city").asText());            // flattened from address
        assertEquals("N1 9GU", c.get("postalCode").asText());      // renamed from zip
        assertEquals(1, c.get("tierRank").asInt());
        assertEquals(15, c.get("discountPercent").asInt());
        assertTrue(c.get("customerForDays").asLong() > 2000);
        assertFalse(c.has("address"));
        assertFalse(c.has("firstName"));
        // audited: the API message in and out, and the backend call
        List<String> lines = auditLines();
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("API_IN ") && l.contains("/api/customers/42")), lines.toString());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("BACKEND_RESP ") && l.contains("Lovelace")), lines.toString());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("API_OUT ") && l.contains("CamelHttpResponseCode=200")
                && l.contains("\"fullName\":\"Ada Lovelace\"")), lines.toString());
    }

    @Test
    void backend404Becomes404() throws Exception {
        HttpResponse<String> r = http("GET", "/api/customers/404", null);
        assertEquals(404, r.statusCode());
        assertEquals("not found", json(r.body()).get("error").asText());
        assertTrue(auditLines().stream().anyMatch(l -> l.startsWith("API_OUT ") && l.contains("\"status\":404")));
    }

    @Test
    void backend500Becomes502WithoutStackTrace() throws Exception {
        HttpResponse<String> r = http("GET", "/api/customers/500", null);
        assertEquals(502, r.statusCode());
        JsonNode body = json(r.body());
        assertEquals("backend error", body.get("error").asText());
        assertEquals(500, body.get("backendStatus").asInt());
        assertFalse(r.body().contains("Exception"), r.body());
        assertFalse(r.body().contains("\tat "), r.body());
    }

    @Test
    void backendBodyThatIsNotJsonBecomes502() throws Exception {
        HttpResponse<String> r = http("GET", "/api/customers/garbage", null);
        assertEquals(502, r.statusCode(), r.body());
        assertEquals("bad backend response", json(r.body()).get("error").asText());
    }

    @Test
    void backendTimeoutBecomes504() throws Exception {
        long t0 = System.nanoTime();
        HttpResponse<String> r = http("GET", "/api/customers/slow", null);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(504, r.statusCode(), r.body());
        assertEquals("backend timeout", json(r.body()).get("error").asText());
        assertTrue(ms < 2900, "answered after " + ms + " ms: the 1 s response timeout did not apply");
    }

    @Test
    void createCustomer() throws Exception {
        HttpResponse<String> r = http("POST", "/api/customers",
                "{\"firstName\":\"Grace\",\"lastName\":\"Hopper\",\"email\":\"grace@navy.mil\",\"tier\":\"silver\","
                        + "\"address\":{\"city\":\"Arlington\"},\"ignored\":1}");
        assertEquals(201, r.statusCode(), r.body());
        assertEquals("/api/customers/1001", r.headers().firstValue("Location").orElse(null));
        JsonNode c = json(r.body());
        assertEquals("1001", c.get("customerId").asText());
        assertEquals("Grace Hopper", c.get("fullName").asText());
        assertEquals(10, c.get("discountPercent").asInt());
        assertTrue(BackendStub.get().requests.stream().anyMatch(l -> l.startsWith("POST /customers {")
                && l.contains("\"email\":\"grace@navy.mil\"") && !l.contains("ignored")), BackendStub.get().requests.toString());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"lastName\":\"H\",\"email\":\"g@x.org\"}|firstName",
        "{\"firstName\":\"G\",\"lastName\":\"H\"}|email",
        "{\"firstName\":\"G\",\"lastName\":\"H\",\"email\":\"not-an-address\"}|email",
        "{\"firstName\":\"G\",\"lastName\":\"\",\"email\":\"g@x.org\"}|lastName",
        "{\"firstName\":7,\"lastName\":\"H\",\"email\":\"g@x.org\"}|firstName",
        "{\"firstName\":\"G\",\"lastName\":\"H\",\"email\":\"g@x.org\",\"tier\":\"platinum\"}|tier",
        "{\"firstName\":\"G\",\"lastName\":\"H\",\"email\":\"g@x.org\",\"address\":{\"planet\":\"Mars\"}}|address.planet",
        "{not json|body",
        "[1,2]|body",
    })
    void badPostBodiesAre400NamingTheField(String body, String field) throws Exception {
        int before = BackendStub.get().requests.size();
        HttpResponse<String> r = http("POST", "/api/customers", body);
        assertEquals(400, r.statusCode(), r.body());
        JsonNode error = json(r.body());
        assertEquals(field, error.get("field").asText());
        assertEquals("validation failed", error.get("error").asText());
        assertEquals(before, BackendStub.get().requests.size(), "nothing reaches the backend");
    }

    @Test
    void deleteCustomer() throws Exception {
        assertEquals(204, http("DELETE", "/api/customers/5", null).statusCode());
        HttpResponse<String> missing = http("DELETE", "/api/customers/404", null);
        assertEquals(404, missing.statusCode());
        assertEquals("not found", json(missing.body()).get("error").asText());
    }

    @Test
    void summaryComposesCustomerOrdersAndAccount() throws Exception {
        HttpResponse<String> r = http("GET", "/api/customers/9/summary", null);
        assertEquals(200, r.statusCode(), r.body());
        JsonNode s = json(r.body());
        assertEquals("Ada Lovelace", s.at("/customer/fullName").asText());
        assertEquals(2, s.at("/orders/count").asInt());
        assertEquals(5, s.at("/orders/itemsOrdered").asInt());
        assertEquals(0, s.at("/orders/totalAmount").decimalValue().compareTo(new java.math.BigDecimal("30.75")));
        assertEquals("2026-04-01T10:00:00Z", s.at("/orders/lastOrderAt").asText());
        assertEquals(1, s.at("/orders/byStatus/open").asInt());
        assertEquals("acc-9", s.at("/account/accountId").asText());
        assertEquals(0, s.at("/account/availableCredit").decimalValue().compareTo(new java.math.BigDecimal("899.5")));
        assertTrue(s.at("/account/overdrawn").asBoolean());
        List<String> calls = BackendStub.get().requests;
        assertTrue(calls.contains("GET /customers/9") && calls.contains("GET /customers/9/orders")
                && calls.contains("GET /customers/9/account"), calls.toString());
    }

    @Test
    void summaryRunsOnTheComposePool() throws Exception {
        assertEquals(200, http("GET", "/api/customers/10/summary", null).statusCode());
        assertTrue(auditLines().stream().anyMatch(l -> l.startsWith("BACKEND_REQ ")), auditLines().toString());
        String metrics = kit("/metrics").body();
        assertTrue(metrics.contains("executor_pool_max_threads{name=\"composePool\"} 8\n"), "compose pool (max 8): " + metrics);
    }

    @Test
    void summaryErrors() throws Exception {
        HttpResponse<String> nf = http("GET", "/api/customers/404/summary", null);
        assertEquals(404, nf.statusCode(), nf.body());
        HttpResponse<String> r = http("GET", "/api/customers/77/summary", null);
        assertEquals(502, r.statusCode(), r.body());
        assertEquals(500, json(r.body()).get("backendStatus").asInt());
    }

    @Test
    void infoTellsVersionsAndConnectors() throws Exception {
        JsonNode lab = json(kit("/lab/info").body()).get("lab");
        assertTrue(lab.get("camel").asText().matches("[34]\\..*"), lab.toString());
        assertTrue(lab.get("tomcat").asText().matches("(9|10)\\..*"), lab.toString());
        assertEquals("not loaded", lab.get("tcnative").asText(), "tcnative is kept off the library path in this fork");
        assertTrue(lab.get("connectors").toString().contains("org.apache.coyote.ajp.AjpNioProtocol"), lab.toString());
    }

    @Test
    void healthIsUp() throws Exception {
        HttpResponse<String> r = http("GET", "/actuator/health", null);
        assertEquals(200, r.statusCode());
        assertEquals("UP", json(r.body()).get("status").asText());
    }

    /** The routes each stack runs, as their metrics name them: Camel 4 inlines each REST entry into its API route. */
    @Test
    void theRoutesAreTheApisTheBackendsAndOnCamel3TheRestEntries() {
        CamelContext camel = context.getBean(CamelContext.class);
        Set<String> ids = camel.getRoutes().stream().map(Route::getRouteId).collect(Collectors.toCollection(TreeSet::new));
        Set<String> expected = new TreeSet<>(List.of("api-get-customer", "api-customer-summary", "api-create-customer",
                "api-delete-customer", "backend-get-customer", "backend-get-orders", "backend-get-account",
                "backend-create-customer", "backend-delete-customer"));
        if (camel.getVersion().startsWith("3.")) {
            expected.addAll(List.of("rest-get-customer", "rest-customer-summary", "rest-create-customer",
                    "rest-delete-customer"));
        }
        assertEquals(expected, ids, "Camel " + camel.getVersion());
    }
}
