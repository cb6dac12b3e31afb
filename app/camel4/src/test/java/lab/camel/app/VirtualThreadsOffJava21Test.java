package lab.camel.app;

/**
 * Virtual threads off on the same Java 21 (no property: the defaults): Tomcat's pools of platform threads on both
 * connectors, Camel's platform thread pools (surefire execution java21-virtual-threads-off).
 */
class VirtualThreadsOffJava21Test extends AbstractVirtualThreadsJava21 {

    @Override
    boolean virtual() {
        return false;
    }
}
