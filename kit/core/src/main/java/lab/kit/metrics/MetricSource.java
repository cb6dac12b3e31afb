package lab.kit.metrics;

/** More samples for the kit's page, from a part of the kit that exists only when its library does (Camel). */
public interface MetricSource {
    void write(Exposition out);

    /** What it knows of the running service for /lab/info (e.g. Camel's version). */
    default void info(java.util.Map<String, Object> lab) {
    }
}
