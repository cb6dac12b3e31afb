package lab.camel.app;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * In-process stand-in for the mock service (same API), on 127.0.0.1 and a free port.
 * Customer ids steer it: "404" → 404 everywhere, "500" → 500 everywhere, "slow" → the customer answers after 3 s,
 * "77" → customer and account fine, orders 500; "garbage" → 200 with a body that is not JSON; any other id → a fine customer, 2 orders, an account.
 */
public final class BackendStub {

    private static BackendStub instance;
    private static final Pattern PATH = Pattern.compile("^/customers(?:/([^/]+))?(/orders|/account)?$");

    private final HttpServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(16);
    public final List<String> requests = new CopyOnWriteArrayList<>();
    /** The client's TCP port of every request: tells whether the app reuses its backend connections. */
    public final List<Integer> clientPorts = new CopyOnWriteArrayList<>();

    private BackendStub() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 100);
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
    }

    /** One stub per test JVM (shared by every Spring context of that JVM). */
    public static synchronized BackendStub get() {
        if (instance == null) {
            try {
                instance = new BackendStub();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return instance;
    }

    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    private void handle(HttpExchange ex) throws IOException {
        String method = ex.getRequestMethod();
        String path = ex.getRequestURI().getPath();
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        requests.add(method + " " + path + (body.isEmpty() ? "" : " " + body));
        clientPorts.add(ex.getRemoteAddress().getPort());
        Matcher m = PATH.matcher(path);
        if (!m.matches()) {
            send(ex, 404, "{\"error\":\"no such path\"}");
            return;
        }
        String id = m.group(1);
        String sub = m.group(2);
        if ("POST".equals(method) && id == null) {
            String json = body.substring(0, body.lastIndexOf('}'))
                    + ",\"id\":1001,\"createdAt\":\"2026-01-02T03:04:05Z\",\"phone\":null,\"notes\":null}";
            ex.getResponseHeaders().add("Location", "/customers/1001");
            send(ex, 201, json);
            return;
        }
        if ("404".equals(id)) {
            send(ex, 404, "{\"error\":\"not found\"}");
            return;
        }
        if ("500".equals(id) || ("77".equals(id) && "/orders".equals(sub))) {
            send(ex, 500, "{\"error\":\"boom\"}");
            return;
        }
        if ("garbage".equals(id)) {
            send(ex, 200, "<html>surprise</html>");
            return;
        }
        if ("DELETE".equals(method)) {
            ex.sendResponseHeaders(204, -1);
            ex.close();
            return;
        }
        if ("slow".equals(id) && sub == null) {
            try {
                Thread.sleep(3000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (sub == null) {
            send(ex, 200, customer(id));
        } else if ("/orders".equals(sub)) {
            send(ex, 200, "[" + order(id, "o-1", "2026-03-01T10:00:00Z", "shipped", "10.50", 2)
                    + "," + order(id, "o-2", "2026-04-01T10:00:00Z", "open", "20.25", 3) + "]");
        } else {
            send(ex, 200, "{\"customerId\":\"" + id + "\",\"accountId\":\"acc-" + id + "\",\"currency\":\"EUR\","
                    + "\"balance\":-100.5,\"creditLimit\":1000,\"status\":\"active\"}");
        }
    }

    static String customer(String id) {
        return "{\"id\":\"" + id + "\",\"firstName\":\"Ada\",\"lastName\":\"Lovelace\",\"email\":\"ada@example.org\","
                + "\"phone\":\"+44 20 1234\",\"tier\":\"gold\",\"createdAt\":\"2020-01-01T00:00:00Z\","
                + "\"address\":{\"street\":\"1 Analytical Row\",\"city\":\"London\",\"zip\":\"N1 9GU\",\"country\":\"GB\"},"
                + "\"notes\":\"likes engines\"}";
    }

    static String order(String customerId, String orderId, String placedAt, String status, String amount, int qty) {
        return "{\"orderId\":\"" + orderId + "\",\"customerId\":\"" + customerId + "\",\"placedAt\":\"" + placedAt
                + "\",\"status\":\"" + status + "\",\"currency\":\"EUR\",\"amount\":" + amount
                + ",\"items\":[{\"sku\":\"SKU-1\",\"quantity\":" + qty + ",\"unitPrice\":1.5}]}";
    }

    private static void send(HttpExchange ex, int status, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }
}
