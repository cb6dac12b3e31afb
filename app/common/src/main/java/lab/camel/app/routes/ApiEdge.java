package lab.camel.app.routes;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

import lab.camel.app.audit.AuditLog;
import lab.camel.app.tomcat.ConnectorTagValve;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.springframework.boot.autoconfigure.web.ServerProperties;
import org.springframework.boot.web.server.Compression;
import org.springframework.stereotype.Component;

/**
 * What every API route does first ({@link #in}) and last ({@link #out}): audit the message, and on the way out
 * compress responses that came through AJP with the server.compression.* settings (Tomcat's AJP connector has no
 * compression of its own; on HTTP Tomcat compresses, so the app leaves those alone).
 */
@Component("api")
public class ApiEdge {

    static final String CONNECTOR = "labConnector";
    static final String ACCEPT_ENCODING = "labAcceptEncoding";

    private final AuditLog audit;
    private final Compression compression;
    private final java.util.List<StackHooks> hooks;

    public ApiEdge(AuditLog audit, ServerProperties server, java.util.List<StackHooks> hooks) {
        this.audit = audit;
        this.compression = server.getCompression();
        this.hooks = hooks;
    }

    public void in(Exchange exchange) {
        // a pooled exchange (lab.camel.exchange-factory=pooled) may still hold a previous request's properties
        java.util.List<String> stale = new java.util.ArrayList<>();
        for (String name : exchange.getProperties().keySet()) {
            if (name.startsWith("lab") && !name.startsWith("labRouteStart.")) { // the route timer's, for this request
                stale.add(name);
            }
        }
        stale.forEach(exchange::removeProperty);
        for (StackHooks hook : hooks) {
            hook.onApiIn(exchange);
        }
        Message msg = exchange.getMessage();
        exchange.setProperty(CONNECTOR, msg.getHeader(ConnectorTagValve.HEADER, String.class));
        exchange.setProperty(ACCEPT_ENCODING, msg.getHeader("Accept-Encoding", String.class));
        audit.apiIn(exchange);
    }

    public void out(Exchange exchange) {
        compressIfAjp(exchange);
        audit.apiOut(exchange);
    }

    void compressIfAjp(Exchange exchange) {
        if (compression == null || !compression.getEnabled()
                || !"ajp".equals(exchange.getProperty(CONNECTOR, String.class))) {
            return;
        }
        String accept = exchange.getProperty(ACCEPT_ENCODING, String.class);
        if (accept == null || !accept.toLowerCase(Locale.ROOT).contains("gzip")) {
            return;
        }
        Message msg = exchange.getMessage();
        String body = msg.getBody(String.class);
        String type = msg.getHeader(Exchange.CONTENT_TYPE, String.class);
        if (body == null || type == null || !mimeTypeMatches(type)) {
            return;
        }
        if (body.getBytes(StandardCharsets.UTF_8).length < compression.getMinResponseSize().toBytes()) {
            return;
        }
        msg.setHeader(Exchange.CONTENT_ENCODING, "gzip"); // Camel's servlet binding gzips the body on write
        msg.setHeader("Vary", "Accept-Encoding");
    }

    private boolean mimeTypeMatches(String contentType) {
        String base = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
        for (String t : compression.getMimeTypes()) {
            if (t.equalsIgnoreCase(base)) return true;
        }
        return false;
    }
}
