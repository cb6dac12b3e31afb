package lab.camel.app.routes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/** JSON helpers shared by the routes (plain Jackson: identical on both stacks). */
public final class Json {
    public static final ObjectMapper MAPPER = new ObjectMapper();
    public static final String CONTENT_TYPE = "application/json";

    private Json() { }

    /** Parses JSON; anything else (null, empty, malformed) is a {@link NotJsonException}. */
    public static JsonNode read(String text) {
        if (text == null || text.isBlank()) {
            throw new NotJsonException("empty body", null);
        }
        try {
            return MAPPER.readTree(text);
        } catch (Exception e) {
            throw new NotJsonException("not JSON: " + e.getMessage(), e);
        }
    }

    /** A body that is not JSON. From the backend it becomes a 502; from a client, a 400 (the validator). */
    public static class NotJsonException extends IllegalArgumentException {
        public NotJsonException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    public static String write(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    public static ObjectNode object() { return MAPPER.createObjectNode(); }

    /** Replaces the message with a JSON response: only our own headers leave the API. */
    public static void respond(Exchange exchange, int status, JsonNode body) {
        Message msg = exchange.getMessage();
        msg.removeHeaders("*");
        msg.setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        msg.setHeader(Exchange.CONTENT_TYPE, CONTENT_TYPE);
        msg.setBody(body == null ? null : write(body));
    }

    public static ObjectNode error(int status, String error, String detail) {
        ObjectNode node = object();
        node.put("status", status);
        node.put("error", error);
        if (detail != null) node.put("detail", detail);
        return node;
    }
}
