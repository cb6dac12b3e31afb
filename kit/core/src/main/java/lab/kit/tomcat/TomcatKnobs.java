package lab.kit.tomcat;

import java.time.Duration;

import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * The server.tomcat.* values a service's configuration sets (the lab's knobs land there), each null when unset.
 *
 * <p>Read through Spring Boot's {@link Binder}, not ServerProperties: only the Binder says whether a key is set (an
 * unset connection-timeout means "HTTP 60 s, AJP none"), and it reads the same keys on Boot 2.7 and 3.x.
 */
public final class TomcatKnobs {
    public final Integer maxThreads;
    public final Integer minSpareThreads;
    public final Integer maxConnections;
    public final Integer acceptCount;
    public final Integer maxKeepAliveRequests;
    public final Duration connectionTimeout;
    public final Duration keepAliveTimeout;

    private TomcatKnobs(Binder binder) {
        maxThreads = integer(binder, "server.tomcat.threads.max");
        minSpareThreads = integer(binder, "server.tomcat.threads.min-spare");
        maxConnections = integer(binder, "server.tomcat.max-connections");
        acceptCount = integer(binder, "server.tomcat.accept-count");
        maxKeepAliveRequests = integer(binder, "server.tomcat.max-keep-alive-requests");
        connectionTimeout = binder.bind("server.tomcat.connection-timeout", Bindable.of(Duration.class)).orElse(null);
        keepAliveTimeout = binder.bind("server.tomcat.keep-alive-timeout", Bindable.of(Duration.class)).orElse(null);
    }

    public static TomcatKnobs of(Environment environment) {
        return new TomcatKnobs(Binder.get(environment));
    }

    private static Integer integer(Binder binder, String key) {
        return binder.bind(key, Bindable.of(Integer.class)).orElse(null);
    }

    @Override
    public String toString() {
        return "maxThreads=" + maxThreads + " minSpareThreads=" + minSpareThreads + " maxConnections=" + maxConnections
                + " acceptCount=" + acceptCount + " connectionTimeout=" + connectionTimeout + " keepAliveTimeout="
                + keepAliveTimeout + " maxKeepAliveRequests=" + maxKeepAliveRequests;
    }
}
