package lab.kit.camel;

import java.lang.reflect.Method;
import java.net.URI;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;

import lab.kit.metrics.Exposition;
import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;

/**
 * The connection pools of camel-http's endpoints, under Micrometer's names for Apache HttpClient
 * (httpcomponents_httpclient_pool_total_{max,pending,connections{state}}, label httpclient: the endpoint's host and
 * port). Read by reflection, because Camel 3 has HttpClient 4 and Camel 4 HttpClient 5, and the getters have the same
 * names in both: HttpEndpoint#getClientConnectionManager, the manager's getTotalStats, and PoolStats' getLeased,
 * getPending, getAvailable and getMax. A service without camel-http has no such endpoint and no such series.
 */
final class HttpClientPools {
    private final CamelContext camel;

    HttpClientPools(CamelContext camel) {
        this.camel = camel;
    }

    /** {pool name: PoolStats} of the endpoints' distinct connection managers. */
    Map<String, Object> stats() {
        Map<Object, String> managers = new IdentityHashMap<>();
        Map<String, Object> stats = new LinkedHashMap<>();
        for (Endpoint endpoint : camel.getEndpoints()) {
            Object manager = call(endpoint, "getClientConnectionManager");
            if (manager == null || managers.containsKey(manager)) {
                continue;
            }
            Object total = call(manager, "getTotalStats");
            if (total != null) {
                String name = unique(stats, authority(endpoint.getEndpointUri()));
                managers.put(manager, name);
                stats.put(name, total);
            }
        }
        return stats;
    }

    void write(Exposition out) {
        Map<String, Object> stats = stats();
        if (stats.isEmpty()) {
            return;
        }
        out.family("httpcomponents_httpclient_pool_total_max", "gauge", "the pool's maximum connections");
        stats.forEach((name, s) -> out.sample("", number(s, "getMax"), "httpclient", name));
        out.family("httpcomponents_httpclient_pool_total_pending", "gauge", "requests waiting for a connection");
        stats.forEach((name, s) -> out.sample("", number(s, "getPending"), "httpclient", name));
        out.family("httpcomponents_httpclient_pool_total_connections", "gauge", "the pool's connections by state");
        stats.forEach((name, s) -> {
            out.sample("", number(s, "getAvailable"), "httpclient", name, "state", "available");
            out.sample("", number(s, "getLeased"), "httpclient", name, "state", "leased");
        });
    }

    static String authority(String endpointUri) {
        try {
            String uri = endpointUri.replaceFirst("^https?://", "http://").replaceFirst("^https?:(?!//)", "http://");
            String authority = URI.create(uri.split("\\?", 2)[0]).getRawAuthority();
            return authority == null ? endpointUri : authority;
        } catch (IllegalArgumentException notAUri) {
            return endpointUri;
        }
    }

    private static String unique(Map<String, Object> taken, String name) {
        String candidate = name;
        for (int i = 2; taken.containsKey(candidate); i++) {
            candidate = name + "#" + i;
        }
        return candidate;
    }

    private static double number(Object target, String getter) {
        Object value = call(target, getter);
        return value instanceof Number ? ((Number) value).doubleValue() : Double.NaN;
    }

    /** target.getter() when target has that public method, else null. */
    private static Object call(Object target, String getter) {
        try {
            Method method = target.getClass().getMethod(getter);
            return method.invoke(target);
        } catch (ReflectiveOperationException | RuntimeException none) {
            return null;
        }
    }
}
