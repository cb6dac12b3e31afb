package lab.camel.app.metrics;

import java.util.LinkedHashMap;
import java.util.Map;

import lab.camel.app.LabProperties;
import org.apache.camel.CamelContext;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.AprLifecycleListener;
import org.apache.catalina.util.ServerInfo;
import org.apache.tomcat.jni.Library;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ApplicationContext;
import org.springframework.stereotype.Component;

/**
 * /actuator/info "lab": what is running — stack, versions (Java, Spring Boot, Camel, Tomcat, tcnative), and each
 * connector's protocol class and port — so a run can record the versions it measured.
 */
@Component
public class LabInfoContributor implements InfoContributor {

    private final LabProperties lab;
    private final CamelContext camel;
    private final ApplicationContext context;

    public LabInfoContributor(LabProperties lab, CamelContext camel, ApplicationContext context) {
        this.lab = lab;
        this.camel = camel;
        this.context = context;
    }

    @Override
    public void contribute(Info.Builder builder) {
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("stack", lab.getStack());
        info.put("java", System.getProperty("java.version"));
        info.put("springBoot", SpringBootVersion.getVersion());
        info.put("camel", camel.getVersion());
        info.put("tomcat", ServerInfo.getServerNumber());
        boolean apr = AprLifecycleListener.isAprAvailable();
        info.put("tcnative", apr ? Library.TCN_MAJOR_VERSION + "." + Library.TCN_MINOR_VERSION + "."
                + Library.TCN_PATCH_VERSION : "not loaded");
        Map<String, Object> connectors = new LinkedHashMap<>();
        if (context instanceof ServletWebServerApplicationContext
                && ((ServletWebServerApplicationContext) context).getWebServer() instanceof TomcatWebServer) {
            TomcatWebServer server = (TomcatWebServer) ((ServletWebServerApplicationContext) context).getWebServer();
            for (Connector c : server.getTomcat().getService().findConnectors()) {
                connectors.put(c.getProtocolHandlerClassName().replaceAll(".*\\.", "") + ":" + c.getLocalPort(),
                        c.getProtocolHandler().getClass().getName());
            }
        }
        info.put("connectors", connectors);
        builder.withDetail("lab", info);
    }
}
