package lab.camel.app.stack;

import lab.camel.app.LabProperties;
import org.apache.camel.CamelContext;
import org.apache.camel.component.http.HttpComponent;
import org.apache.camel.spring.boot.CamelContextConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * camel4 stack: applies lab.backend.* to Camel's http component (Apache HttpClient 5); the tuning kit
 * reads its connection pool (httpcomponents_httpclient_pool_*, kit/README.md).
 */
@Component
public class BackendHttpClient implements CamelContextConfiguration {

    private static final Logger LOG = LoggerFactory.getLogger(BackendHttpClient.class);
    private final LabProperties.Backend cfg;

    public BackendHttpClient(LabProperties lab) {
        this.cfg = lab.getBackend();
    }

    @Override
    public void beforeApplicationStart(CamelContext camel) {
        HttpComponent http = camel.getComponent("http", HttpComponent.class);
        if (cfg.getMaxTotalConnections() != null) http.setMaxTotalConnections(cfg.getMaxTotalConnections());
        if (cfg.getConnectionsPerRoute() != null) http.setConnectionsPerRoute(cfg.getConnectionsPerRoute());
        if (cfg.getConnectTimeoutMs() != null) http.setConnectTimeout(cfg.getConnectTimeoutMs());
        if (cfg.getResponseTimeoutMs() != null) http.setResponseTimeout(cfg.getResponseTimeoutMs());
        if (cfg.getConnectionRequestTimeoutMs() != null) {
            http.setConnectionRequestTimeout(cfg.getConnectionRequestTimeoutMs());
        }
        if (cfg.getConnectionTtlMs() != null) http.setConnectionTimeToLive(cfg.getConnectionTtlMs());
        if (!cfg.isKeepAlive()) {
            http.setHttpClientConfigurer(b -> b.setConnectionReuseStrategy((request, response, context) -> false));
        }
        LOG.info("Backend client (HttpClient 5): url={} maxTotalConnections={} connectionsPerRoute={} connectTimeout={} "
                        + "responseTimeout={} connectionRequestTimeout={} connectionTimeToLive={} keepAlive={}",
                cfg.getUrl(), http.getMaxTotalConnections(), http.getConnectionsPerRoute(), http.getConnectTimeout(),
                http.getResponseTimeout(), http.getConnectionRequestTimeout(), http.getConnectionTimeToLive(),
                cfg.isKeepAlive());
    }

    @Override
    public void afterApplicationStart(CamelContext camel) {
    }
}
