package lab.camel.app;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * Virtual threads on, switched on as the lab does: JVM system properties on the java command line,
 * -Dspring.threads.virtual.enabled=true -Dcamel.threads.virtual.enabled=true (surefire execution
 * java21-virtual-threads-on). Without them these tests fail: nothing else in the build turns virtual threads on.
 */
class VirtualThreadsOnJava21Test extends AbstractVirtualThreadsJava21 {

    @Override
    boolean virtual() {
        return true;
    }

    @Test
    void theJvmGotTheLabsProperties() {
        List<String> arguments = ManagementFactory.getRuntimeMXBean().getInputArguments();
        assertTrue(arguments.contains("-Dspring.threads.virtual.enabled=true"), arguments.toString());
        assertTrue(arguments.contains("-Dcamel.threads.virtual.enabled=true"), arguments.toString());
    }
}
