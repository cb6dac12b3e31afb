package lab.camel.app.audit;

import java.util.Map;

import lab.camel.app.LabProperties;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Writes every input and output message (body and key headers) to the logger named {@value #LOGGER}.
 * Whether that is synchronous or asynchronous is Logback's business (see app/config/logback.xml).
 */
@Component("audit")
public class AuditLog {

    public static final String LOGGER = "audit";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);
    private static final String[] KEY_HEADERS = {
        Exchange.HTTP_METHOD, Exchange.HTTP_URI, Exchange.HTTP_PATH, Exchange.HTTP_QUERY, Exchange.HTTP_RESPONSE_CODE,
        Exchange.CONTENT_TYPE, "Accept", "Content-Length", "Location", "User-Agent", "X-Request-Id"
    };

    private final LabProperties.Audit config;

    public AuditLog(LabProperties properties) {
        this.config = properties.getAudit();
    }

    /** The API request, as it arrived. */
    public void apiIn(Exchange exchange) { write("API_IN", exchange); }

    /** The API response, as it leaves (success or error). */
    public void apiOut(Exchange exchange) { write("API_OUT", exchange); }

    /** The request sent to the backend. */
    public void backendRequest(Exchange exchange) {
        if (config.isBackendCalls()) write("BACKEND_REQ", exchange);
    }

    /** The backend's response. */
    public void backendResponse(Exchange exchange) {
        if (config.isBackendCalls()) write("BACKEND_RESP", exchange);
    }

    private void write(String direction, Exchange exchange) {
        if (!config.isEnabled() || !LOG.isInfoEnabled()) {
            return;
        }
        Message msg = exchange.getMessage();
        // materialise the body (a request stream can be read once only) and put it back
        Object raw = msg.getBody();
        String body = null;
        if (raw != null) {
            body = msg.getBody(String.class);
            msg.setBody(body);
        }
        StringBuilder line = new StringBuilder(256 + (body == null ? 0 : body.length()));
        line.append(direction).append(" exchange=").append(exchange.getExchangeId());
        line.append(" route=").append(exchange.getFromRouteId());
        line.append(" headers={");
        boolean first = true;
        Map<String, Object> headers = msg.getHeaders();
        for (String name : KEY_HEADERS) {
            Object value = headers.get(name);
            if (value != null) {
                if (!first) line.append(", ");
                line.append(name).append('=').append(value);
                first = false;
            }
        }
        line.append("} body=");
        if (body == null) {
            line.append("<empty>");
        } else if (config.getMaxBodyChars() >= 0 && body.length() > config.getMaxBodyChars()) {
            line.append(body, 0, config.getMaxBodyChars()).append("...(").append(body.length()).append(" chars)");
        } else {
            line.append(body.replace('\n', ' ').replace('\r', ' '));
        }
        LOG.info(line.toString());
    }
}
