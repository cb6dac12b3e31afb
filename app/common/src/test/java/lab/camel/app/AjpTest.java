package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.zip.GZIPInputStream;

import org.junit.jupiter.api.Test;

/** A real AJP round trip to the AJP connector, with the right secret, a wrong one and none. */
class AjpTest extends AbstractAppTest {

    @Test
    void ajpWithSecretReachesTheApi() throws Exception {
        AjpClient.Response r = AjpClient.get(AJP_PORT, "/api/customers/8", SECRET, Map.of());
        assertEquals(200, r.status, r.text());
        assertEquals("Ada Lovelace", json(r.text()).get("fullName").asText());
        assertNull(r.headers.get("Content-Encoding"), "no gzip unless asked for");
    }

    @Test
    void ajpHealth() throws Exception {
        AjpClient.Response r = AjpClient.get(AJP_PORT, "/actuator/health", SECRET, Map.of());
        assertEquals(200, r.status, r.text());
        assertEquals("UP", json(r.text()).get("status").asText());
    }

    @Test
    void ajpWithWrongSecretIsRefused() throws Exception {
        assertEquals(403, AjpClient.get(AJP_PORT, "/api/customers/8", "wrong", Map.of()).status);
    }

    @Test
    void ajpWithoutSecretIsRefused() throws Exception {
        assertEquals(403, AjpClient.get(AJP_PORT, "/api/customers/8", null, Map.of()).status);
    }

    @Test
    void ajpResponsesAreCompressedWithTheServerCompressionSettings() throws Exception {
        AjpClient.Response r = AjpClient.get(AJP_PORT, "/api/customers/8/summary", SECRET,
                Map.of("Accept-Encoding", "gzip"));
        assertEquals(200, r.status);
        assertEquals("gzip", r.headers.get("Content-Encoding"));
        String body;
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(r.body))) {
            body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertEquals(2, json(body).at("/orders/count").asInt());
    }
}
