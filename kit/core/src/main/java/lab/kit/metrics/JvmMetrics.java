package lab.kit.metrics;

import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.management.OperatingSystemMXBean;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.UnixOperatingSystemMXBean;

/**
 * The JVM's own figures under the names and labels Micrometer gives them, so that PCP's metric list and the report
 * read a service with the kit as they read the sample app: jvm_memory_{used,max}_bytes{area,id},
 * jvm_gc_pause_seconds{action,cause,gc}, jvm_gc_live_data_size_bytes and jvm_gc_max_data_size_bytes (the old
 * generation after a major collection, and its limit), jvm_compilation_time_ms_total{compiler} (the JIT's time,
 * summed over its compiler threads: how long a run still compiles), process_files_{open,max}_files. GC pauses are
 * counted from the JVM's collection notifications, as Micrometer's JvmGcMetrics does.
 */
final class JvmMetrics {
    private final Map<String, double[]> pauses = new ConcurrentHashMap<>();   // action|cause|gc → {count, seconds}
    private final AtomicLong liveDataBytes = new AtomicLong();

    JvmMetrics() {
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc instanceof NotificationEmitter) {
                ((NotificationEmitter) gc).addNotificationListener(this::collected, null, null);
            }
        }
    }

    private void collected(Notification notification, Object handback) {
        if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(notification.getType())) {
            return;
        }
        GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from(
                (CompositeData) notification.getUserData());
        String key = info.getGcAction() + "|" + info.getGcCause() + "|" + info.getGcName();
        pauses.compute(key, (k, v) -> {
            double[] sums = v == null ? new double[2] : v;
            sums[0] += 1;
            sums[1] += info.getGcInfo().getDuration() / 1000.0;
            return sums;
        });
        if (info.getGcAction().contains("major")) {
            info.getGcInfo().getMemoryUsageAfterGc().forEach((pool, usage) -> {
                if (isOldGen(pool)) {
                    liveDataBytes.set(usage.getUsed());
                }
            });
        }
    }

    static boolean isOldGen(String pool) {
        String p = pool.toLowerCase(java.util.Locale.ROOT);
        return p.contains("old gen") || p.contains("tenured");
    }

    void write(Exposition out) {
        out.family("jvm_memory_used_bytes", "gauge", "The amount of used memory");
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            out.sample("", pool.getUsage().getUsed(), "area", area(pool), "id", pool.getName());
        }
        out.family("jvm_memory_max_bytes", "gauge", "The maximum amount of memory that can be used (-1: undefined)");
        double oldMax = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            MemoryUsage usage = pool.getUsage();
            out.sample("", usage.getMax(), "area", area(pool), "id", pool.getName());
            if (isOldGen(pool.getName())) {
                oldMax = usage.getMax();
            }
        }
        out.family("jvm_gc_pause_seconds", "summary", "Time spent in GC pause");
        pauses.forEach((key, sums) -> {
            String[] parts = key.split("\\|", 3);
            out.sample("_count", sums[0], "action", parts[0], "cause", parts[1], "gc", parts[2]);
            out.sample("_sum", sums[1], "action", parts[0], "cause", parts[1], "gc", parts[2]);
        });
        out.family("jvm_gc_live_data_size_bytes", "gauge", "Size of the old generation after its last major GC");
        out.sample("", liveDataBytes.get());
        out.family("jvm_gc_max_data_size_bytes", "gauge", "Max size of the old generation");
        out.sample("", oldMax);
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit != null && jit.isCompilationTimeMonitoringSupported()) {      // none under -Xint
            out.family("jvm_compilation_time_ms", "counter", "The approximate accumulated elapsed time spent in "
                    + "compilation");
            out.sample("_total", jit.getTotalCompilationTime(), "compiler", jit.getName());
        }
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof UnixOperatingSystemMXBean) {
            UnixOperatingSystemMXBean unix = (UnixOperatingSystemMXBean) os;
            out.family("process_files_open_files", "gauge", "The open file descriptor count");
            out.sample("", unix.getOpenFileDescriptorCount());
            out.family("process_files_max_files", "gauge", "The maximum file descriptor count");
            out.sample("", unix.getMaxFileDescriptorCount());
        }
    }

    private static String area(MemoryPoolMXBean pool) {
        return pool.getType() == MemoryType.HEAP ? "heap" : "nonheap";
    }
}
