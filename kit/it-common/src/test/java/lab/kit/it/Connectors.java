package lab.kit.it;

import java.util.Arrays;
import java.util.List;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.ajp.AbstractAjpProtocol;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ApplicationContext;

/** The live Tomcat connectors of a running application: what the kit really set, read from Tomcat's own objects. */
final class Connectors {
    private Connectors() {
    }

    static List<Connector> of(ApplicationContext context) {
        TomcatWebServer server = (TomcatWebServer) ((ServletWebServerApplicationContext) context).getWebServer();
        return Arrays.asList(server.getTomcat().getService().findConnectors());
    }

    static Connector ajp(ApplicationContext context) {
        return of(context).stream().filter(c -> c.getProtocolHandler() instanceof AbstractAjpProtocol).findFirst()
                .orElseThrow(() -> new AssertionError("no AJP connector in " + of(context)));
    }

    static Connector http(ApplicationContext context) {
        return of(context).stream().filter(c -> c.getProtocolHandler() instanceof AbstractHttp11Protocol).findFirst()
                .orElseThrow(() -> new AssertionError("no HTTP connector in " + of(context)));
    }

    static int tomcatMajor() {
        return Integer.parseInt(org.apache.catalina.util.ServerInfo.getServerNumber().split("\\.")[0]);
    }
}
