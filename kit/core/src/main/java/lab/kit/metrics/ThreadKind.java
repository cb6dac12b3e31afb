package lab.kit.metrics;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Whether work runs on virtual threads (Java 21) or platform threads, read from live threads. The kit is compiled for
 * Java 17, which has no {@code Thread.isVirtual()}: it is looked up by reflection, and on Java 17 every thread is a
 * platform thread.
 */
public final class ThreadKind {
    public static final String VIRTUAL = "virtual";
    public static final String PLATFORM = "platform";
    static final long PROBE_SECONDS = 5;
    private static final Method IS_VIRTUAL = isVirtualMethod();

    private ThreadKind() {
    }

    private static Method isVirtualMethod() {
        try {
            return Thread.class.getMethod("isVirtual");
        } catch (NoSuchMethodException beforeJava21) {
            return null;
        }
    }

    public static boolean isVirtual(Thread thread) {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (Boolean) IS_VIRTUAL.invoke(thread);
        } catch (ReflectiveOperationException unexpected) {
            return false;
        }
    }

    public static String of(Thread thread) {
        return isVirtual(thread) ? VIRTUAL : PLATFORM;
    }

    /**
     * What an executor really runs its work on: one task is run on it and the thread that ran it is looked at.
     * {@code {"executor": "virtual"|"platform"|"none"|"unknown (...)", "class": the executor's class}}. A Tomcat
     * connector's executor runs the connector's requests, so this is the kind of thread that serves them.
     */
    static Map<String, Object> probe(Executor executor) {
        Map<String, Object> found = new TreeMap<>();
        if (executor == null) {
            found.put("executor", "none");
            found.put("class", "none");
            return found;
        }
        found.put("class", executor.getClass().getName());
        CompletableFuture<Thread> ran = new CompletableFuture<>();
        try {
            executor.execute(() -> ran.complete(Thread.currentThread()));
            found.put("executor", of(ran.get(PROBE_SECONDS, TimeUnit.SECONDS)));
        } catch (RejectedExecutionException rejected) {
            found.put("executor", "unknown (the executor rejected the probe: " + rejected.getMessage() + ")");
        } catch (TimeoutException busy) {
            found.put("executor", "unknown (no thread ran the probe within " + PROBE_SECONDS + " s)");
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            found.put("executor", "unknown (interrupted)");
        } catch (java.util.concurrent.ExecutionException | RuntimeException failed) {
            found.put("executor", "unknown (" + failed + ")");
        }
        return found;
    }
}
