package lab.bench;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.http.HttpMethods;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;

/**
 * Times, per call, what camel-http's HttpMethodHelper.createMethod does for every request a route sends: read the
 * header CamelHttpMethod as HttpMethods. A route that sets the header as a String ("GET", as most routes and the
 * sample app do) makes Camel convert String → HttpMethods each time; with the enum itself there is nothing to convert.
 * A registered conversion (String → Integer) is the control. Prints ns per call, the median of 5 rounds after 3.
 */
public final class ConverterLookup {
    private static final int CALLS = 200_000;
    private static volatile Object sink;

    public static void main(String[] args) throws Exception {
        CamelContext camel = new DefaultCamelContext();
        camel.start();
        Exchange exchange = new DefaultExchange(camel);
        System.out.printf("Camel %s, Java %s%n", camel.getVersion(), System.getProperty("java.version"));
        report("header String \"GET\" as HttpMethods", () -> {
            exchange.getMessage().setHeader(Exchange.HTTP_METHOD, "GET");
            return exchange.getMessage().getHeader(Exchange.HTTP_METHOD, HttpMethods.class);
        });
        report("header HttpMethods.GET as HttpMethods", () -> {
            exchange.getMessage().setHeader(Exchange.HTTP_METHOD, HttpMethods.GET);
            return exchange.getMessage().getHeader(Exchange.HTTP_METHOD, HttpMethods.class);
        });
        report("control: header String \"42\" as Integer", () -> {
            exchange.getMessage().setHeader("n", "42");
            return exchange.getMessage().getHeader("n", Integer.class);
        });
        camel.stop();
    }

    private static void report(String what, java.util.concurrent.Callable<Object> call) throws Exception {
        double[] ns = new double[8];
        for (int round = 0; round < ns.length; round++) {
            long start = System.nanoTime();
            for (int i = 0; i < CALLS; i++) {
                sink = call.call();
            }
            ns[round] = (System.nanoTime() - start) / (double) CALLS;
        }
        double[] measured = java.util.Arrays.copyOfRange(ns, 3, ns.length);
        java.util.Arrays.sort(measured);
        System.out.printf("  %-42s %9.1f ns per call (rounds %.1f … %.1f), result %s%n", what, measured[2],
                measured[0], measured[measured.length - 1], sink);
    }
}
