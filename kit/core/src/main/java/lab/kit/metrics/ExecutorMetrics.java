package lab.kit.metrics;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadPoolExecutor;

import org.springframework.context.ApplicationContext;
import org.springframework.scheduling.concurrent.ThreadPoolTaskExecutor;

/**
 * The service's own thread pools, found among its beans (a ThreadPoolExecutor, or Spring's ThreadPoolTaskExecutor),
 * under Micrometer's ExecutorServiceMetrics names: executor_{active_threads,pool_max_threads,pool_size_threads,
 * queued_tasks,queue_remaining_tasks}, label name (the bean's name).
 */
final class ExecutorMetrics {
    private final Map<String, ThreadPoolExecutor> pools = new TreeMap<>();

    void find(ApplicationContext context) {
        context.getBeansOfType(ThreadPoolExecutor.class, false, false).forEach(pools::put);
        context.getBeansOfType(ThreadPoolTaskExecutor.class, false, false).forEach((name, executor) -> {
            try {
                pools.put(name, executor.getThreadPoolExecutor());
            } catch (IllegalStateException notInitialised) {
                // a pool not started yet has no executor: nothing to read
            }
        });
    }

    void write(Exposition out) {
        out.family("executor_active_threads", "gauge", "threads actively executing tasks");
        pools.forEach((name, p) -> out.sample("", p.getActiveCount(), "name", name));
        out.family("executor_pool_max_threads", "gauge", "the maximum allowed number of threads in the pool");
        pools.forEach((name, p) -> out.sample("", p.getMaximumPoolSize(), "name", name));
        out.family("executor_pool_size_threads", "gauge", "the current number of threads in the pool");
        pools.forEach((name, p) -> out.sample("", p.getPoolSize(), "name", name));
        out.family("executor_queued_tasks", "gauge", "tasks queued for execution");
        pools.forEach((name, p) -> out.sample("", p.getQueue().size(), "name", name));
        out.family("executor_queue_remaining_tasks", "gauge", "tasks the queue can take without blocking");
        pools.forEach((name, p) -> out.sample("", p.getQueue().remainingCapacity(), "name", name));
    }
}
