package lab.camel.app;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The lab's own knobs ({@code lab.*}). Every key and its default is documented in app/README.md.
 * A {@code null} value means "not set: keep the framework's own default".
 */
@ConfigurationProperties(prefix = "lab")
public class LabProperties {

    /** Which stack this jar is (camel3 | camel4); set by the jar itself, informational. */
    private String stack = "unknown";
    private final Backend backend = new Backend();
    private final Compose compose = new Compose();
    private final Audit audit = new Audit();

    public String getStack() { return stack; }
    public void setStack(String stack) { this.stack = stack; }
    public Backend getBackend() { return backend; }
    public Compose getCompose() { return compose; }
    public Audit getAudit() { return audit; }

    /** The external service's HTTP client (Camel's http component, Apache HttpClient 4 on camel3, 5 on camel4). */
    public static class Backend {
        private String url = "http://127.0.0.1:9080";
        private Integer maxTotalConnections;      // camel-http default 200
        private Integer connectionsPerRoute;      // camel-http default 20
        private Long connectTimeoutMs;            // camel3: -1 (none), camel4: 180000
        private Long responseTimeoutMs;           // camel3 socketTimeout: -1 (none), camel4 responseTimeout: 0 (none)
        private Long connectionRequestTimeoutMs;  // camel3: -1 (none), camel4: 180000
        private Long connectionTtlMs;             // camel-http connectionTimeToLive: -1 (unlimited)
        private boolean keepAlive = true;         // HttpClient's default: reuse connections
        /** CamelHttpMethod as camel-http's HttpMethods enum, not a String (docs/methods.md: the migration). */
        private boolean methodAsEnum = false;

        public String getUrl() { return url; }
        public void setUrl(String url) { this.url = url; }
        public Integer getMaxTotalConnections() { return maxTotalConnections; }
        public void setMaxTotalConnections(Integer v) { this.maxTotalConnections = v; }
        public Integer getConnectionsPerRoute() { return connectionsPerRoute; }
        public void setConnectionsPerRoute(Integer v) { this.connectionsPerRoute = v; }
        public Long getConnectTimeoutMs() { return connectTimeoutMs; }
        public void setConnectTimeoutMs(Long v) { this.connectTimeoutMs = v; }
        public Long getResponseTimeoutMs() { return responseTimeoutMs; }
        public void setResponseTimeoutMs(Long v) { this.responseTimeoutMs = v; }
        public Long getConnectionRequestTimeoutMs() { return connectionRequestTimeoutMs; }
        public void setConnectionRequestTimeoutMs(Long v) { this.connectionRequestTimeoutMs = v; }
        public Long getConnectionTtlMs() { return connectionTtlMs; }
        public void setConnectionTtlMs(Long v) { this.connectionTtlMs = v; }
        public boolean isKeepAlive() { return keepAlive; }
        public void setKeepAlive(boolean keepAlive) { this.keepAlive = keepAlive; }
        public boolean isMethodAsEnum() { return methodAsEnum; }
        public void setMethodAsEnum(boolean methodAsEnum) { this.methodAsEnum = methodAsEnum; }
    }

    /** The thread pool that fetches a summary's three parts in parallel (Camel's default thread pool profile). */
    public static class Compose {
        private int poolSize = 10;
        private int maxPoolSize = 20;
        private int queueSize = 1000;
        private long keepAliveSeconds = 60;
        /** CallerRuns (Camel's default: the request thread runs the call itself) | Abort (503 when full) */
        private String rejectedPolicy = "CallerRuns";

        public String getRejectedPolicy() { return rejectedPolicy; }
        public void setRejectedPolicy(String v) { this.rejectedPolicy = v; }

        public int getPoolSize() { return poolSize; }
        public void setPoolSize(int v) { this.poolSize = v; }
        public int getMaxPoolSize() { return maxPoolSize; }
        public void setMaxPoolSize(int v) { this.maxPoolSize = v; }
        public int getQueueSize() { return queueSize; }
        public void setQueueSize(int v) { this.queueSize = v; }
        public long getKeepAliveSeconds() { return keepAliveSeconds; }
        public void setKeepAliveSeconds(long v) { this.keepAliveSeconds = v; }
    }

    /** Audit log of every message (the logger "audit"; sync/async is chosen in logback.xml). */
    public static class Audit {
        private boolean enabled = true;
        private boolean backendCalls = true;
        private int maxBodyChars = -1;

        public boolean isEnabled() { return enabled; }
        public void setEnabled(boolean enabled) { this.enabled = enabled; }
        public boolean isBackendCalls() { return backendCalls; }
        public void setBackendCalls(boolean v) { this.backendCalls = v; }
        public int getMaxBodyChars() { return maxBodyChars; }
        public void setMaxBodyChars(int v) { this.maxBodyChars = v; }
    }
}
