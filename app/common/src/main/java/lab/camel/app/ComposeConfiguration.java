package lab.camel.app;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.spi.ThreadPoolProfile;
import org.apache.camel.util.concurrent.ThreadPoolRejectedPolicy;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The compose thread pool (lab.compose.*): the summary's three backend calls run on it in parallel. The tuning kit
 * reads it as a bean (executor_* {name="composePool"}). With Camel's virtual threads (camel4 on Java 21,
 * camel.threads.virtual.enabled=true) Camel makes it a thread per task instead: no pool, the keys unused. */
@Configuration(proxyBeanMethods = false)
public class ComposeConfiguration {

    @Bean(name = "composePool", destroyMethod = "")
    public ExecutorService composePool(CamelContext camel, LabProperties lab) {
        LabProperties.Compose c = lab.getCompose();
        ThreadPoolProfile profile = new ThreadPoolProfile("compose");
        profile.setPoolSize(c.getPoolSize());
        profile.setMaxPoolSize(c.getMaxPoolSize());
        profile.setMaxQueueSize(c.getQueueSize());
        profile.setKeepAliveTime(c.getKeepAliveSeconds());
        profile.setTimeUnit(TimeUnit.SECONDS);
        if (!"CallerRuns".equals(c.getRejectedPolicy()) && !"Abort".equals(c.getRejectedPolicy())) {
            throw new IllegalStateException("lab.compose.rejected-policy=" + c.getRejectedPolicy() + ": expected CallerRuns or Abort");
        }
        profile.setRejectedPolicy(ThreadPoolRejectedPolicy.valueOf(c.getRejectedPolicy()));
        // owned by Camel's ExecutorServiceManager: shut down with the CamelContext
        ExecutorService pool = camel.getExecutorServiceManager().newThreadPool(this, "compose", profile);
        return pool;
    }
}
