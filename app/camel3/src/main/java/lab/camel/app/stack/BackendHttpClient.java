package lab.camel.app.stack;

import lab.camel.app.LabProperties;
import org.apache.camel.CamelContext;
import org.apache.camel.component.http.HttpComponent;
import org.apache.camel.spring.boot.CamelContextConfiguration;
import org.apache.http.impl.NoConnectionReuseStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * camel3 stack: applies lab.backend.* to Camel's http component (Apache HttpClient 4); the tuning kit
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
        if (cfg.getConnectTimeoutMs() != null) http.setConnectTimeout(cfg.getConnectTimeoutMs().intValue());
        if (cfg.getResponseTimeoutMs() != null) http.setSocketTimeout(cfg.getResponseTimeoutMs().intValue());
        if (cfg.getConnectionRequestTimeoutMs() != null) {
            http.setConnectionRequestTimeout(cfg.getConnectionRequestTimeoutMs().intValue());
        }
        if (cfg.getConnectionTtlMs() != null) http.setConnectionTimeToLive(cfg.getConnectionTtlMs());
        if (!cfg.isKeepAlive()) {
            http.setHttpClientConfigurer(b -> b.setConnectionReuseStrategy(NoConnectionReuseStrategy.INSTANCE));
        }
        LOG.info("Backend client (HttpClient 4): url={} maxTotalConnections={} connectionsPerRoute={} connectTimeout={} "
                        + "socketTimeout={} connectionRequestTimeout={} connectionTimeToLive={} keepAlive={}",
                cfg.getUrl(), http.getMaxTotalConnections(), http.getConnectionsPerRoute(), http.getConnectTimeout(),
                http.getSocketTimeout(), http.getConnectionRequestTimeout(), http.getConnectionTimeToLive(),
                cfg.isKeepAlive());
    }

    @Override
    public void afterApplicationStart(CamelContext camel) {
    }
}
